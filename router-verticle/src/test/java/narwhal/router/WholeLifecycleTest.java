package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A request an engine runs whole ends as every request does (docs/errors.md): a streamed {@code /v1/responses} that
 * breaks after its first bytes, or is cut by the end of a graceful stop, ends with the stream's terminal error event
 * and its journal row, on a real simulated engine that goes silent mid-stream.
 */
@Timeout(120)
class WholeLifecycleTest {
  private static final int DELTAS_BEFORE_SILENCE = 2;

  private static UnaryOperator<JsonObject> readTimeout(double seconds) {
    return json -> json.put("engine", new JsonObject().put("first_token_timeout_s", 5).put("decode_read_timeout_s", seconds));
  }

  private static JsonObject streamedResponse() {
    return new JsonObject().put("model", RouterHarness.MODEL).put("input", "Tell me of the arctic").put("max_output_tokens", 6)
        .put("stream", true);
  }

  private static void silentMidStream(RouterHarness h) {
    h.engine("D0").faults().add(new JsonObject().put("kind", "silence_after").put("phase", "decode")
        .put("after", DELTAS_BEFORE_SILENCE).put("count", 1));
  }

  /** The last {@code data:} line of a stream, as JSON. */
  private static JsonObject lastEvent(String body) {
    List<String> data = body.lines().filter(l -> l.startsWith("data: ")).toList();
    return new JsonObject(data.get(data.size() - 1).substring("data: ".length()));
  }

  @Test
  void aStreamedResponseThatBreaksAfterItsFirstBytesEndsWithTheTerminalErrorEvent() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), readTimeout(0.5))) {
      silentMidStream(h);
      RouterHarness.Reply reply = h.post("/v1/responses", streamedResponse());
      assertEquals(200, reply.status(), "the stream was committed with its first bytes: " + reply.body());
      assertTrue(reply.contentType().startsWith("text/event-stream"), reply.contentType());
      assertEquals(DELTAS_BEFORE_SILENCE, reply.body().lines().filter(l -> l.equals("event: response.output_text.delta")).count(),
          reply.body());
      assertFalse(reply.body().contains("response.completed"), reply.body());
      JsonObject error = lastEvent(reply.body()).getJsonObject("error");
      assertEquals("decode", error.getString("type"), reply.body());
      assertEquals(504, error.getInteger("code"), reply.body());
      assertTrue(error.getString("message").startsWith("engine went silent"), reply.body());

      JsonObject row = h.journalRow(reply.requestId());
      assertEquals("failed", row.getString("terminal"), row.encode());
      assertEquals("decode_read_timeout", row.getString("reason"), row.encode());
      assertEquals("decode", row.getString("error_type"), row.encode());
      assertEquals(1, row.getInteger("attempts"), row.encode());
      JsonObject failure = row.getJsonArray("attempt_failures").getJsonObject(0);
      assertEquals("output_started", failure.getString("retry_reason"), row.encode());
      assertTrue(row.getLong("output_len") > 0, row.encode());
      assertEquals(0, h.reservations(), "the engine's reservation was released");
    }
  }

  @Test
  void aStreamedResponseCutByTheEndOfAGracefulStopEndsWithTheTerminalErrorEvent() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), readTimeout(60))) {
      silentMidStream(h);
      h.placementSettled();
      Promise<Void> firstBytes = Promise.promise();
      StringBuilder streamed = new StringBuilder();
      RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setAbsoluteURI(h.routerUrl() + "/v1/responses")
          .putHeader("content-type", "application/json");
      Future<Integer> status = h.onContext(() -> h.http.request(options)
          .compose(req -> req.send(streamedResponse().toBuffer()))
          .compose(resp -> {
            resp.handler(b -> {
              streamed.append(b);
              firstBytes.tryComplete();
            });
            return resp.end().map(resp.statusCode());
          }));
      RouterHarness.await(firstBytes.future());
      h.router.refuseNew();
      RouterHarness.await(h.vertx.undeploy(h.router.deploymentID()));
      assertEquals(200, RouterHarness.await(status).intValue(), "the stream was committed before the stop");
      JsonObject error = lastEvent(streamed.toString()).getJsonObject("error");
      assertEquals("shutting_down", error.getString("type"), streamed.toString());
      assertEquals(503, error.getInteger("code"), streamed.toString());
      List<JsonObject> rows = h.journalRows(1);
      assertEquals(1, rows.size(), rows.toString());
      assertEquals("failed", rows.get(0).getString("terminal"), rows.toString());
      assertEquals("graceful_timeout", rows.get(0).getString("reason"), rows.toString());
      assertEquals("/v1/responses", rows.get(0).getString("endpoint"), rows.toString());
      assertTrue(rows.get(0).getJsonArray("attempt_failures").isEmpty(), "no evidence against its engine: " + rows);
    }
  }
}
