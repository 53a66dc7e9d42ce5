package example;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;

/** A completion and a streamed chat completion through a Narwhal router, with the official OpenAI Java client. */
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
    } finally {
      client.close();
    }
  }
}
