package example;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.embeddings.EmbeddingCreateParams;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseStreamEvent;

/**
 * Through a Narwhal router, with the official OpenAI Java client: the models, a completion, a streamed chat completion,
 * embeddings, a response and its streamed follow-up through {@code previous_response_id}.
 */
public final class NarwhalOpenAiExample {
  public static void main(String[] args) {
    String baseUrl = System.getProperty("narwhal.url", "http://localhost:8000/v1");
    // The router checks a key only when server.api_key_env is set; the client insists on one.
    String apiKey = System.getenv().getOrDefault("NARWHAL_API_KEY", "none");
    OpenAIClient client = OpenAIOkHttpClient.builder().baseUrl(baseUrl).apiKey(apiKey).build();
    try {
      Completion completion = client.completions().create(CompletionCreateParams.builder()
          .model("Qwen/Qwen3-0.6B").prompt("The narwhal is").maxTokens(8).build());
      System.out.println("completion: " + completion.choices().get(0).text());

      ChatCompletionCreateParams chat = ChatCompletionCreateParams.builder().model("Qwen/Qwen3-0.6B")
          .addUserMessage("hello").maxCompletionTokens(12).build();
      System.out.print("chat (streamed):");
      try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(chat)) {
        stream.stream().forEach(chunk -> chunk.choices().forEach(c -> c.delta().content().ifPresent(System.out::print)));
      }
      System.out.println();

      client.models().list().data().forEach(m -> System.out.println("model: " + m.id()));
      System.out.println("embedding: " + client.embeddings().create(EmbeddingCreateParams.builder()
          .model("Qwen/Qwen3-0.6B").input("The narwhal is").build()).data().get(0).embedding().size() + " floats");

      Response response = client.responses().create(ResponseCreateParams.builder().model("Qwen/Qwen3-0.6B")
          .input("Where do narwhals live?").maxOutputTokens(8L).build());
      System.out.println("response " + response.id() + ":" + response.output().get(0).asMessage().content().get(0).asOutputText().text());
      System.out.print("follow-up (streamed):");
      try (StreamResponse<ResponseStreamEvent> stream = client.responses().createStreaming(ResponseCreateParams.builder()
          .model("Qwen/Qwen3-0.6B").input("And what do they eat?").previousResponseId(response.id()).maxOutputTokens(8L).build())) {
        stream.stream().forEach(event -> event.outputTextDelta().ifPresent(d -> System.out.print(d.delta())));
      }
      System.out.println();
    } finally {
      client.close();
    }
  }
}
