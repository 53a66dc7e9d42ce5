package narwhal.router;

import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static narwhal.router.FailureChecks.eventually;
import static narwhal.router.FailureChecks.rowFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A client that goes away (docs/errors.md, ownership and cleanup): the request ends as {@code cancelled} with one
 * journal row, every reservation is released, the engine leg in flight is closed (the simulator stops
 * generating: its running count drops to zero long before the slow stream would have ended), and the
 * disconnect is no evidence against any engine.
 */
@Timeout(90)
class ClientDisconnectTest {

  /** 200 tokens at 200 ms each: a stream that would run 40 s unless the router closes it. */
  static JsonObject longRequest(boolean stream) {
    return new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "a very long story about narwhals")
        .put("max_tokens", 200).put("ignore_eos", true).put("stream", stream);
  }

  static RouterHarness slowDecodeFleet() throws Exception {
    RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
    h.engine("D0").faults().add(new JsonObject().put("kind", "slow_tokens").put("itl_ms", 200).put("phase", "decode").put("count", 10));
    return h;
  }

  @Test
  void streamingClientGoneMidStreamCancelsTheRequestAndClosesTheDecodeLeg() throws Exception {
    try (RouterHarness h = slowDecodeFleet()) {
      long generatedBefore = h.engine("D0").stats().getLong("generation_tokens");
      Promise<String> closedAfterOutput = Promise.promise();
      FailureChecks.onContext(h, () -> h.http.request(HttpMethod.POST, h.router.actualPort(), "127.0.0.1", "/v1/completions")
          .compose(req -> req.putHeader("content-type", "application/json").send(longRequest(true).toBuffer()).onSuccess(resp -> {
            Buffer seen = Buffer.buffer();
            resp.handler(chunk -> {
              seen.appendBuffer(chunk);
              long outputs = seen.toString().lines().filter(l -> l.startsWith("data: {")).count();
              if (outputs >= 2 && !closedAfterOutput.future().isComplete()) {
                closedAfterOutput.complete(resp.getHeader("x-request-id"));
                req.reset();
              }
            });
          })).onFailure(closedAfterOutput::tryFail));
      String rid = RouterHarness.await(closedAfterOutput.future());

      JsonObject row = rowFor(h, rid);
      assertEquals("cancelled", row.getString("terminal"), row.encode());
      assertEquals("client_disconnected", row.getString("reason"));
      assertTrue(row.getLong("output_len") > 0, row.encode());
      assertTrue(row.getJsonArray("attempt_failures").isEmpty(), "a disconnect is not an attempt failure: " + row.encode());
      assertConsumerClosedAndNothingHeld(h, rid, generatedBefore);
    }
  }

  @Test
  void nonStreamingClientGoneDuringDecodeCancelsTheRequest() throws Exception {
    try (RouterHarness h = slowDecodeFleet()) {
      long generatedBefore = h.engine("D0").stats().getLong("generation_tokens");
      HttpClientRequest req = RouterHarness.await(h.http.request(HttpMethod.POST, h.router.actualPort(), "127.0.0.1", "/v1/completions"));
      req.putHeader("content-type", "application/json").send(longRequest(false).toBuffer());
      SimEngine d0 = h.engine("D0");
      eventually(h, () -> !d0.requests().isEmpty() && d0.stats().getLong("running") == 1, () -> "decode is generating: " + d0.stats());
      String rid = d0.requests().get(0).getString("request_id").replace("-a1-decode", "");
      req.reset();

      JsonObject row = rowFor(h, rid);
      assertEquals("cancelled", row.getString("terminal"), row.encode());
      assertConsumerClosedAndNothingHeld(h, rid, generatedBefore);
    }
  }

  @Test
  void clientGoneDuringPrefillClosesTheProducerLeg() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      // The prefill runs and never answers (the default prefill_timeout_s is 120 s): only the router can end it.
      h.engine("P0").faults().add(new JsonObject().put("kind", "silence_after").put("after", 1).put("phase", "prefill"));
      HttpClientRequest req = RouterHarness.await(h.http.request(HttpMethod.POST, h.router.actualPort(), "127.0.0.1", "/v1/completions"));
      req.putHeader("content-type", "application/json").send(longRequest(true).toBuffer());
      SimEngine p0 = h.engine("P0");
      eventually(h, () -> p0.stats().getLong("running") == 1, () -> "the prefill runs: " + p0.stats());
      String rid = p0.requests().get(0).getString("request_id").replace("-a1-prefill", "");
      req.reset();

      JsonObject row = rowFor(h, rid);
      assertEquals("cancelled", row.getString("terminal"), row.encode());
      eventually(h, () -> p0.stats().getLong("running") == 0, () -> "the producer's leg was closed: " + p0.stats());
      assertTrue(h.engine("D0").requests().isEmpty(), "no decode after the client left");
      eventually(h, () -> FailureChecks.reservations(h) == 0, () -> "reservations: " + FailureChecks.reservations(h));
    }
  }

  private static void assertConsumerClosedAndNothingHeld(RouterHarness h, String rid, long generatedBefore) {
    SimEngine d0 = h.engine("D0");
    assertEquals(rid + "-a1-decode", d0.requests().get(0).getString("request_id"));
    eventually(h, () -> FailureChecks.reservations(h) == 0, () -> "reservations: " + FailureChecks.reservations(h));
    eventually(h, () -> d0.stats().getLong("running") == 0, () -> "the consumer still generates for a gone client: " + d0.stats());
    long tokens = d0.stats().getLong("generation_tokens") - generatedBefore;
    assertTrue(tokens < 200, "generation stopped early: " + tokens);
    JsonObject state = FailureChecks.get(h, "/narwhal/state").json();
    for (Object o : state.getJsonArray("engines")) {
      JsonObject engine = (JsonObject) o;
      assertEquals("serving", engine.getString("state"), engine.encode());
      JsonObject streaks = engine.getJsonObject("streaks", new JsonObject());
      for (String cls : streaks.fieldNames()) {
        assertEquals(0, streaks.getInteger(cls), "a disconnect is no evidence against " + engine.getString("iid") + ": " + streaks);
      }
    }
  }
}
