package narwhal.router;

import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The engine that answered a response dies (its process gone, nothing listens at its address) and the breaker has not
 * ejected it yet (docs/operations.md#endpoints-an-engine-runs-whole): a follow-up naming the response, and a read of
 * it, get vLLM's own 404 for an unknown response, never a 5xx; the refused connection is still breaker evidence.
 */
class ResponseOwnerDiedTest {
  private static RouterHarness h;

  @BeforeAll
  static void fleet() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("recovery", new JsonObject().put("eject_after", 1_000_000).put("liveness_misses", 1_000_000)));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  /** The answer, asked again once if the router's pooled connection to the dead engine was reset rather than refused. */
  private static RouterHarness.Reply notReset(Supplier<RouterHarness.Reply> ask) throws Exception {
    RouterHarness.Reply reply = ask.get();
    if (reply.status() == 502 && "connection_reset".equals(h.journalRow(reply.requestId()).getString("reason"))) reply = ask.get();
    return reply;
  }

  @Test
  void aFollowUpAndAReadOfAResponseWhoseEngineDiedGetVllmsNotFound() throws Exception {
    RouterHarness.Reply first = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "Where do narwhals live?").put("max_output_tokens", 4));
    assertEquals(200, first.status(), first.body());
    String id = first.json().getString("id");
    String owner = h.journalRow(first.requestId()).getString("decode_iid");
    RouterHarness.await(h.engine(owner).close());

    RouterHarness.Reply followUp = notReset(() -> h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "And what do they eat?").put("previous_response_id", id)));
    assertEquals(404, followUp.status(), followUp.body());
    assertEquals("Response with id '" + id + "' not found.", followUp.error().getString("message"));
    assertEquals("response_id", followUp.error().getString("param"));
    JsonObject row = h.journalRow(followUp.requestId());
    assertEquals("invalid", row.getString("terminal"), row.encode());
    assertEquals("response_not_found", row.getString("reason"), row.encode());
    assertEquals("connect_error", row.getJsonArray("attempt_failures").getJsonObject(0).getString("reason"), row.encode());

    RouterHarness.Reply read = notReset(() -> h.request(HttpMethod.GET, "/v1/responses/" + id, null, Map.of()));
    assertEquals(404, read.status(), read.body());
    assertEquals("Response with id '" + id + "' not found.", read.error().getString("message"));
  }
}
