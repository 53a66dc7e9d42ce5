package narwhal.router;

import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * With an engine contract pinned, readmission runs lifecycle validation: an ejected engine that comes back as
 * another vLLM version stays out, with the reason in /narwhal/state and the journal; back on the pinned version,
 * it is readmitted.
 */
@Timeout(90)
class ContractReadmissionTest {

  @Test
  void restartedEngineWithAnotherVersionIsNotReadmitted() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("engine_contract", new JsonObject().put("vllm_version", "0.29.0").put("model", RouterHarness.MODEL))
        .put("recovery", new JsonObject().put("eject_after", 1).put("monitor_interval_s", 0.1).put("readmit_every", 2)
            .put("liveness_every", 100000)))) {
      SimEngine d0 = h.engine("D0");
      int port = d0.port();
      RouterHarness.await(d0.close());
      awaitState(h, "D0", "ejected", () -> h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)));

      SimEngine upgraded = RouterHarness.await(SimEngine.start(h.vertx, d0.options().setPort(port).setVersion("0.30.0")));
      awaitEvent(h, "D0", "contract: vllm_version is 0.30.0, contract pins 0.29.0");
      JsonObject engine = engine(h, "D0");
      assertEquals("ejected", engine.getString("state"));
      assertTrue(engine.getString("last_probe").contains("vllm_version is 0.30.0"), engine.encode());

      RouterHarness.await(upgraded.close());
      RouterHarness.await(SimEngine.start(h.vertx, d0.options().setPort(port).setVersion("0.29.0")));
      awaitState(h, "D0", "serving", () -> { });
      FailureChecks.eventually(h, () -> journalEvents(h).stream().anyMatch(e -> "D0".equals(e.getString("iid"))
          && "serving".equals(e.getString("to")) && "lifecycle_probe".equals(e.getString("cause"))),
          () -> "readmitted on lifecycle evidence: " + journalEvents(h));
    }
  }

  /** The journal's engine events; the journal is written asynchronously, so callers wait for what they expect. */
  static java.util.List<JsonObject> journalEvents(RouterHarness h) {
    try {
      return h.journalEvents();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  static JsonObject engine(RouterHarness h, String iid) {
    return h.get("/narwhal/state").json().getJsonArray("engines").stream().map(JsonObject.class::cast)
        .filter(e -> iid.equals(e.getString("iid"))).findFirst().orElseThrow();
  }

  /** Repeats {@code nudge} until the engine reaches the state (each round trip is an event we wait on, not a sleep). */
  static void awaitState(RouterHarness h, String iid, String state, Runnable nudge) throws Exception {
    for (int i = 0; i < 500; i++) {
      if (state.equals(engine(h, iid).getString("state"))) return;
      nudge.run();
      RouterHarness.await(io.vertx.core.Future.<Void>future(p -> h.vertx.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError(iid + " never reached " + state + ": " + engine(h, iid));
  }

  static void awaitEvent(RouterHarness h, String iid, String detail) throws Exception {
    for (int i = 0; i < 500; i++) {
      if (h.journalEvents().stream().anyMatch(e -> iid.equals(e.getString("iid")) && String.valueOf(e.getString("detail")).contains(detail))) {
        return;
      }
      RouterHarness.await(io.vertx.core.Future.<Void>future(p -> h.vertx.setTimer(20, t -> p.complete())));
    }
    throw new AssertionError("no journal event for " + iid + " with " + detail + ": " + h.journalEvents());
  }
}
