package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A client's {@code kv_transfer_params}, at the top level or inside {@code vllm_xargs}, never reaches an engine, on any
 * endpoint that forwards a body (docs/vllm.md#what-a-client-cannot-send): each simulated engine's record of what it
 * received shows the body without the client's parameters, its other {@code vllm_xargs} kept, and, on the disaggregated
 * legs, the router's own.
 */
@Timeout(120)
class InternalFieldsTest {
  private static final JsonObject EVIL = new JsonObject().put("do_remote_prefill", true).put("remote_host", "127.0.0.1")
      .put("remote_port", 29555).put("remote_engine_id", "evil-engine")
      .put("remote_block_ids", new JsonArray().add(new JsonArray().add(1).add(2).add(3).add(4)));
  private static RouterHarness h;

  @BeforeAll
  static void fleet() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, options) -> options.setLogTokenize(true));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clean() {
    h.resetEngines();
  }

  @ParameterizedTest
  @ValueSource(strings = {"/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/tokenize", "/detokenize"})
  void aClientsTransferParametersReachNoEngine(String endpoint) {
    for (boolean stream : endpoint.startsWith("/v1/") && !endpoint.equals("/v1/embeddings") ? new boolean[] {false, true} : new boolean[] {false}) {
      h.resetEngines();
      JsonObject body = body(endpoint).put("stream", stream).put("kv_transfer_params", EVIL.copy())
          .put("vllm_xargs", new JsonObject().put("kv_transfer_params", EVIL.copy()).put("kept", "yes"));
      RouterHarness.Reply reply = h.post(endpoint, body);
      assertEquals(200, reply.status(), endpoint + ": " + reply.body());

      List<JsonObject> received = Stream.of("P0", "D0").flatMap(e -> h.engine(e).requests().stream()).toList();
      assertFalse(received.isEmpty(), endpoint + ": an engine ran it");
      for (JsonObject entry : received) {
        JsonObject sent = entry.getJsonObject("body");
        assertNotNull(sent, entry.encode());
        assertNotEquals(EVIL, sent.getValue("kv_transfer_params"), endpoint + " " + entry.getString("phase"));
        assertFalse(sent.encode().contains("evil-engine"), endpoint + ": " + sent.encode());
        boolean contextCheck = entry.getString("request_id", "").endsWith("-tokenize");
        if (!contextCheck) {
          assertEquals(new JsonObject().put("kept", "yes"), sent.getJsonObject("vllm_xargs"),
              endpoint + ": the client's other vllm_xargs go on untouched");
        }
        switch (entry.getString("phase")) {
          case "prefill" -> assertEquals(new JsonObject().put("do_remote_decode", true).put("do_remote_prefill", false),
              sent.getJsonObject("kv_transfer_params"), "the router's own prefill parameters");
          case "decode" -> {
            JsonObject kv = sent.getJsonObject("kv_transfer_params");
            assertNotNull(kv, "the producer's descriptor: " + sent.encode());
            assertEquals(h.engine("P0").engineId(), kv.getString("remote_engine_id"), "the producer's descriptor");
            assertEquals(h.engine("P0").sideChannelPort(), kv.getInteger("remote_port"));
          }
          case "tokenize" -> assertFalse(sent.containsKey("kv_transfer_params"), sent.encode());
          default -> assertFalse(sent.containsKey("kv_transfer_params"), endpoint + ": " + sent.encode());
        }
      }
      boolean disaggregated = endpoint.endsWith("completions");
      assertEquals(disaggregated, received.stream().anyMatch(r -> "decode".equals(r.getString("phase"))), endpoint);
    }
  }

  private static JsonObject body(String endpoint) {
    JsonObject body = new JsonObject().put("model", RouterHarness.MODEL);
    return switch (endpoint) {
      case "/v1/completions" -> body.put("prompt", "the narwhal").put("max_tokens", 4);
      case "/v1/chat/completions" -> body.put("max_tokens", 4)
          .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "the narwhal")));
      case "/v1/responses" -> body.put("input", "x").put("max_output_tokens", 4);
      case "/v1/embeddings" -> body.put("input", "ice");
      case "/tokenize" -> body.put("prompt", "the narwhal swims");
      case "/detokenize" -> body.put("tokens", new JsonArray().add(1).add(2));
      default -> throw new IllegalArgumentException(endpoint);
    };
  }
}
