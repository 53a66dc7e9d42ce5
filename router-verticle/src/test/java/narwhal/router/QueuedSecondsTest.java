package narwhal.router;

import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static narwhal.router.FailureChecks.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The journal's {@code queued_s} (docs/operations.md#journal) for a request that ends while its attempt waits for a
 * turn: its attempt asked for one and waited, so the row says how long, not null ("no attempt asked for one"). The
 * request wrote its row before the turn's failure reached it, and the wait was added after the row was written.
 */
@Timeout(120)
class QueuedSecondsTest {
  @Test
  void aClientThatLeavesWhileQueuedHasItsWaitInTheRow() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        fleet -> fleet.put("serving", new JsonObject().put("max_legs_in_flight", 1))
            .put("flow", new JsonObject().put("queue_timeout_s", 60)),
        (iid, options) -> options.setItlMs(100))) {
      JsonObject longStream = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hold the only leg")
          .put("max_tokens", 200).put("ignore_eos", true).put("stream", true);
      HttpClientRequest holder = RouterHarness.await(h.onContext(() -> h.http.request(HttpMethod.POST, h.router.actualPort(), "127.0.0.1", "/v1/completions")));
      holder.putHeader("content-type", "application/json").send(longStream.toBuffer());
      eventually(h, () -> flow(h).getInteger("running", 0) == 1, () -> "the holder runs: " + flow(h));
      HttpClientRequest waiter = RouterHarness.await(h.onContext(() -> h.http.request(HttpMethod.POST, h.router.actualPort(), "127.0.0.1", "/v1/completions")));
      waiter.putHeader("content-type", "application/json").putHeader("x-request-id", "left-while-queued")
          .send(new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "wait").put("max_tokens", 4).toBuffer());
      eventually(h, () -> flow(h).getInteger("waiting", 0) == 1, () -> "the waiter waits: " + flow(h));
      waiter.reset();
      JsonObject row = h.journalRow("left-while-queued");
      assertEquals("cancelled", row.getString("terminal"), row.encode());
      assertNotNull(row.getValue("queued_s"), "its attempt asked for a turn and waited for it: " + row.encode());
      assertTrue(row.getDouble("queued_s") > 0 && row.getDouble("queued_s") <= row.getDouble("duration_s"),
          "it waited, within the request's time: " + row.encode());
      holder.reset();
      eventually(h, () -> flow(h).getInteger("running", -1) == 0, () -> "nothing runs: " + flow(h));
    }
  }

  private static JsonObject flow(RouterHarness h) {
    JsonObject flow = h.get("/narwhal/state").json().getJsonObject("flow");
    return flow == null ? new JsonObject() : flow;
  }
}
