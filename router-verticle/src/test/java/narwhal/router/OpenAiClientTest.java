package narwhal.router;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The official OpenAI Java client works through the router as it does against vLLM. */
@Timeout(60)
class OpenAiClientTest {
  static RouterHarness h;
  static OpenAIClient client;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
    client = OpenAIOkHttpClient.builder().baseUrl(h.routerUrl() + "/v1").apiKey("not-checked").maxRetries(0).build();
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    h.close();
  }

  @Test
  void streamsAChatCompletion() {
    ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model(RouterHarness.MODEL)
        .addUserMessage("tell me about tusks").maxCompletionTokens(10).build();
    StringBuilder text = new StringBuilder();
    try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(params)) {
      stream.stream().forEach(chunk -> chunk.choices().forEach(c -> c.delta().content().ifPresent(text::append)));
    }
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/chat/completions", new JsonObject().put("model", RouterHarness.MODEL)
        .put("max_completion_tokens", 10).put("messages", new io.vertx.core.json.JsonArray()
            .add(new JsonObject().put("role", "user").put("content", "tell me about tusks"))));
    assertEquals(direct.json().getJsonArray("choices").getJsonObject(0).getJsonObject("message").getString("content"), text.toString());
  }

  @Test
  void listsModelsAndGetsEmbeddingsAsTheEngineGivesThem() {
    List<String> ids = client.models().list().data().stream().map(com.openai.models.models.Model::id).toList();
    assertEquals(List.of(RouterHarness.MODEL), ids);
    com.openai.models.embeddings.CreateEmbeddingResponse embedding = client.embeddings().create(
        com.openai.models.embeddings.EmbeddingCreateParams.builder().model(RouterHarness.MODEL).input("the narwhal").build());
    io.vertx.core.json.JsonArray direct = h.direct(h.engine("D0"), "/v1/embeddings", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "the narwhal")).json().getJsonArray("data").getJsonObject(0).getJsonArray("embedding");
    List<Float> vector = embedding.data().get(0).embedding();
    assertEquals(direct.size(), vector.size());
    for (int i = 0; i < vector.size(); i++) assertEquals(direct.getDouble(i).floatValue(), vector.get(i));
  }

  @Test
  void createsAResponseStreamsOneAndContinuesThroughPreviousResponseId() {
    com.openai.models.responses.Response first = client.responses().create(com.openai.models.responses.ResponseCreateParams.builder()
        .model(RouterHarness.MODEL).input("Where do narwhals live?").maxOutputTokens(8L).build());
    String text = first.output().get(0).asMessage().content().get(0).asOutputText().text();
    JsonObject direct = h.direct(h.engine("D0"), "/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "Where do narwhals live?").put("max_output_tokens", 8)).json();
    assertEquals(direct.getJsonArray("output").getJsonObject(0).getJsonArray("content").getJsonObject(0).getString("text"), text);

    StringBuilder streamed = new StringBuilder();
    try (StreamResponse<com.openai.models.responses.ResponseStreamEvent> stream = client.responses().createStreaming(
        com.openai.models.responses.ResponseCreateParams.builder().model(RouterHarness.MODEL).input("And what do they eat?")
            .previousResponseId(first.id()).maxOutputTokens(8L).build())) {
      stream.stream().forEach(e -> e.outputTextDelta().ifPresent(d -> streamed.append(d.delta())));
    }
    assertFalse(streamed.toString().isEmpty(), "the follow-up streamed its text");
  }

  @Test
  void getsANonStreamingCompletion() {
    Completion completion = client.completions().create(CompletionCreateParams.builder().model(RouterHarness.MODEL)
        .prompt("The narwhal swims under the arctic ice").maxTokens(8).build());
    RouterHarness.Reply direct = h.direct(h.engine("D0"), "/v1/completions", new JsonObject().put("model", RouterHarness.MODEL)
        .put("prompt", "The narwhal swims under the arctic ice").put("max_tokens", 8));
    JsonObject expected = direct.json();
    assertFalse(completion.choices().get(0).text().isEmpty());
    assertEquals(expected.getJsonArray("choices").getJsonObject(0).getString("text"), completion.choices().get(0).text());
    assertEquals(expected.getJsonObject("usage").getLong("completion_tokens"), completion.usage().orElseThrow().completionTokens());
  }

  @Test
  void surfacesATerminalErrorEventMidStreamAsAnError() {
    h.engine("D0").faults().add(new JsonObject().put("kind", "error_in_stream").put("after", 2).put("code", 500)
        .put("message", "engine fell over").put("phase", "decode"));
    ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model(RouterHarness.MODEL)
        .addUserMessage("hello").maxCompletionTokens(10).build();
    assertThrows(RuntimeException.class, () -> {
      try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(params)) {
        stream.stream().forEach(chunk -> { });
      }
    });
    h.engine("D0").faults().clear();
  }
}
