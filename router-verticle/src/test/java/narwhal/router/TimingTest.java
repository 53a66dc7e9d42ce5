package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ttft_s} stops at the producer's completion and {@code first_byte_s} at the first decode output: a
 * simulated prefill delay shows up in the first, a simulated KV-transfer delay only in the difference.
 * The assertions are lower bounds set by the simulator's injected delays, never upper bounds on speed.
 */
@Timeout(60)
class TimingTest {

  @Test
  void prefillDelayCountsInTtftAndTransferDelayAfterIt() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json, (iid, sim) -> {
      if (iid.equals("P0")) sim.setTtftBaseMs(300);
      if (iid.equals("D0")) sim.setKvTransferPerBlockMs(400);
    })) {
      RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(true));
      assertEquals(200, reply.status(), reply.body());
      JsonObject row = h.journalRow(reply.requestId());
      double ttft = row.getDouble("ttft_s");
      double firstByte = row.getDouble("first_byte_s");
      assertTrue(ttft >= 0.3, "the producer's prefill delay is inside ttft_s: " + row);
      assertTrue(firstByte - ttft >= 0.4, "the KV transfer lies between producer completion and first output: " + row);
      assertTrue(firstByte <= row.getDouble("duration_s"));
      assertEquals(0, h.reservations());
    }
  }
}
