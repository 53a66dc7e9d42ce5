package narwhal.router;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Fleets whose shape decides the outcome: same-worker decode, no decode engine, the in-flight limit, handoff age. */
@Timeout(60)
class PlacementOutcomesTest {

  @Test
  void sameWorkerDecodeSendsNoTransferParameters() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("B0:both"))) {
      JsonObject body = DisaggregatedExecutionTest.completion(false)
          .put("kv_transfer_params", new JsonObject().put("do_remote_prefill", true).put("remote_engine_id", "evil"));
      RouterHarness.Reply reply = h.post("/v1/completions", body);
      assertEquals(200, reply.status(), reply.body());
      List<JsonObject> requests = h.engine("B0").requests();
      assertEquals(2, requests.size());
      assertEquals("prefill", requests.get(0).getString("phase"));
      JsonObject decode = requests.get(1).getJsonObject("body");
      assertFalse(decode.containsKey("kv_transfer_params"), "same-worker decode carries no kv_transfer_params: " + decode);
      JsonObject row = h.journalRows(1).get(0);
      assertEquals(false, row.getBoolean("crossed"));
    }
  }

  @Test
  void decodeAvoidsTheProducerWhenAnotherEngineCan() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("B0:both", "B1:both"))) {
      for (int i = 0; i < 4; i++) {
        RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
        assertEquals(200, reply.status(), reply.body());
      }
      for (JsonObject row : h.journalRows(4)) {
        assertEquals(true, row.getBoolean("crossed"), row.encode());
      }
      assertEquals(2, h.engine("B0").requests().stream().filter(r -> r.getString("phase").equals("prefill")).count(),
          "ties rotate across producers");
    }
  }

  @Test
  void noEngineForEitherPhaseIs503BeforeAnyDispatch() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      h.vertx.eventBus().publish(narwhal.common.bus.Addresses.FLEET_CHANGED,
          new EngineStateEvent("D0", EngineState.EJECTED, "admin", 0, null, System.currentTimeMillis(), "test").toJson());
      h.placementSettled();
      h.resetEngines();
      RouterHarness.Reply noDecode = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(503, noDecode.status(), noDecode.body());
      assertEquals("1", noDecode.retryAfter());
      assertEquals("no_schedulable_engines", noDecode.error().getString("type"), "refused before the prefill, not after it");
      assertEquals("Engine capacity is unavailable for model `" + RouterHarness.MODEL + "`", noDecode.error().getString("message"));
      assertEquals(0, h.engine("P0").requests().size(), "no prefill pinned KV for a request nobody could decode");
      assertEquals(503, h.get("/ready").status());

      h.vertx.eventBus().publish(narwhal.common.bus.Addresses.FLEET_CHANGED,
          new EngineStateEvent("P0", EngineState.EJECTED, "admin", 0, null, System.currentTimeMillis(), "test").toJson());
      h.placementSettled();
      RouterHarness.Reply beforeDispatch = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(503, beforeDispatch.status());
      assertEquals("no_schedulable_engines", beforeDispatch.error().getString("type"));
      assertEquals(0, h.reservations());
      assertEquals("rejected", h.journalRows(2).get(0).getString("terminal"));
      assertEquals("rejected", h.journalRows(2).get(1).getString("terminal"));
    }
  }

  @Test
  void inFlightLimitIs429WithRetryAfter() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("serving", new JsonObject().put("max_connections", 1)))) {
      h.engine("D0").faults().add(new JsonObject().put("kind", "silence_after").put("after", 1).put("phase", "decode"));
      var first = h.onContext(() -> h.http.request(io.vertx.core.http.HttpMethod.POST, h.router.actualPort(), "127.0.0.1", "/v1/completions")
          .compose(req -> req.putHeader("content-type", "application/json").send(DisaggregatedExecutionTest.completion(true).toBuffer())));
      var firstResponse = RouterHarness.await(first);
      assertEquals(200, firstResponse.statusCode(), "the first request streams and stays open");
      RouterHarness.Reply second = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(429, second.status(), second.body());
      assertEquals("1", second.retryAfter());
      assertEquals("server_overloaded_error", second.error().getString("type"));
      assertEquals("router in-flight limit reached", second.error().getString("message"));
      RouterHarness.await(firstResponse.request().connection().close());
    }
  }

  @Test
  void handoffOlderThanItsBoundIsNotDecoded() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json,
        (iid, sim) -> {
          if (iid.equals("P0")) sim.setKvLeaseSeconds(1).setTtftBaseMs(1200);
        })) {
      RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(504, reply.status(), reply.body());
      assertEquals("handoff_expired", reply.error().getString("type"));
      assertEquals("KV handoff expired before decode dispatch", reply.error().getString("message"));
      assertTrue(h.engine("D0").requests().isEmpty(), "no decode request was sent");
      JsonObject row = h.journalRows(1).get(0);
      assertEquals("expired", row.getString("terminal"));
      assertNull(row.getValue("first_byte_s"));
      assertEquals(0, h.reservations());
    }
  }
}
