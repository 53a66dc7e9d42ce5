package narwhal.router;

import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A decode engine that goes silent after its first token is held after three stream failures, ejected while the
 * fault persists (its inference probe fails), and readmitted only when a probe passes after the fault is cleared.
 */
@Timeout(90)
class BreakerRecoveryTest {

  @Test
  void silentDecoderIsHeldEjectedAndReadmittedOnlyByAPassingProbe() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("engine", json.getJsonObject("engine").put("decode_read_timeout_s", 0.3).put("first_token_timeout_s", 1))
        .put("recovery", new JsonObject().put("eject_after", 3).put("monitor_interval_s", 0.1).put("readmit_every", 3)
            .put("liveness_every", 100000)))) {
      LinkedBlockingQueue<JsonObject> changes = new LinkedBlockingQueue<>();
      MessageConsumer<JsonObject> watcher = h.vertx.eventBus().consumer(Addresses.FLEET_CHANGED, m -> {
        if ("D0".equals(m.body().getString("iid"))) changes.add(m.body());
      });
      RouterHarness.await(watcher.completion());
      h.engine("D0").faults().add(new JsonObject().put("kind", "silence_after").put("after", 1).put("phase", "decode").put("count", 100000));

      String lastFailedProducer = null;
      int failures = 0;
      while (failures < 3) {
        RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
        if (reply.status() == 504) {
          failures++;
          assertTrue(reply.error().getString("message").startsWith("engine went silent between tokens"), reply.body());
          String rid = reply.requestId();
          lastFailedProducer = h.journalRow(rid).getString("prefill_iid");
        } else {
          assertEquals(200, reply.status(), reply.body());
        }
      }
      JsonObject held = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(held, "D0 changed state");
      assertEquals("held", held.getString("state"));
      assertEquals("stream", held.getString("cause"));
      JsonObject ejected = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(ejected);
      assertEquals("ejected", ejected.getString("state"), "the probe failed while the fault persisted (after " + held.encode()
          + ": " + ejected.encode() + ")");
      String producer = lastFailedProducer;
      assertTrue(h.engine(producer).requests().stream().anyMatch(r -> r.getString("request_id").startsWith("probe-")),
          "the probe's prefill ran on the original producer " + producer);

      h.engine("D0").clearRequests();
      for (int i = 0; i < 6; i++) {
        assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status(),
            "with D0 out, D1 serves every request");
      }
      assertTrue(h.engine("D0").requests().stream().allMatch(r -> r.getString("request_id").startsWith("probe-")),
          "no client request is placed on an ejected engine; only probes reach it");
      h.engine("D0").faults().clear();
      h.engine("D0").clearRequests();
      JsonObject readmitted = changes.poll(30, TimeUnit.SECONDS);
      assertNotNull(readmitted);
      assertEquals("serving", readmitted.getString("state"));
      assertEquals("lifecycle_probe", readmitted.getString("cause"), "an ejected engine comes back through the preflight checks");
      assertTrue(h.engine("D0").requests().stream().anyMatch(r -> r.getString("request_id").startsWith("probe-")),
          "readmission followed a probe that decoded on D0");

      h.engine("D0").clearRequests();
      for (int i = 0; i < 4; i++) assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status());
      assertTrue(h.engine("D0").requests().stream().anyMatch(r -> r.getString("request_id").contains("-decode")),
          "requests reach D0 again");
      String state = h.get("/narwhal/state").body();
      assertTrue(state.contains("\"streaks\""), state);
      String metrics = h.get("/metrics").body();
      assertTrue(metrics.contains("narwhal_engine_ejections_total{cause=\"stream\",iid=\"D0\"}"), metrics);
      assertTrue(metrics.contains("narwhal_engine_readmissions_total{evidence=\"lifecycle_probe\",iid=\"D0\"}"));
    }
  }

  @Test
  void probeIsInconclusiveWhileTheOriginalProducerIsDownAndRetriedAtTheCadence() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("engine", json.getJsonObject("engine").put("decode_read_timeout_s", 0.3).put("first_token_timeout_s", 1))
        .put("recovery", new JsonObject().put("eject_after", 1).put("monitor_interval_s", 0.1).put("readmit_every", 2)
            .put("liveness_every", 100000)))) {
      h.admin("drain", new JsonObject().put("iid", "P1"));
      h.admin("quarantine", new JsonObject().put("iid", "D1").put("seconds", 600));
      h.engine("D0").faults().add(new JsonObject().put("kind", "silence_after").put("after", 1).put("phase", "decode").put("count", 1));
      io.vertx.core.Future<RouterHarness.Reply> failing = h.onContext(() -> io.vertx.core.Future.future(p ->
          new Thread(() -> p.complete(h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)))).start()));
      while (h.engine("D0").requests().stream().noneMatch(r -> r.getString("request_id").contains("-decode"))) {
        RouterHarness.await(io.vertx.core.Future.<Void>future(p -> h.vertx.setTimer(10, t -> p.complete())));
      }
      RouterHarness.await(h.engine("P0").stopListening());
      h.admin("readmit", new JsonObject().put("iid", "D1"));
      assertEquals(504, RouterHarness.await(failing).status());

      ContractReadmissionTest.awaitState(h, "D0", "held", () -> { });
      String metric = "narwhal_engine_probes_total{iid=\"D0\",kind=\"inference\",outcome=\"inconclusive\"}";
      for (int i = 0; i < 500 && !metricAtLeast(h, metric, 2); i++) {
        RouterHarness.await(io.vertx.core.Future.<Void>future(p -> h.vertx.setTimer(20, t -> p.complete())));
      }
      assertTrue(metricAtLeast(h, metric, 2), "probed again at the readmission cadence: " + h.get("/metrics").body());
      assertEquals("held", ContractReadmissionTest.engine(h, "D0").getString("state"), "inconclusive keeps the engine held");
      assertTrue(ContractReadmissionTest.engine(h, "D0").getString("last_probe").contains("P0"));

      RouterHarness.await(h.engine("P0").resumeListening());
      ContractReadmissionTest.awaitState(h, "D0", "serving", () -> { });
    }
  }

  private static boolean metricAtLeast(RouterHarness h, String series, double n) {
    for (String line : h.get("/metrics").body().split("\n")) {
      if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1)) >= n;
    }
    return false;
  }
}
