package narwhal.placement;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Hostile {@code vllm:num_requests_waiting_by_reason} text: the queue is the series whose own reason is capacity. */
class WaitingReasonParseTest {

  @Test
  void aLabelWhoseNameEndsInReasonIsNotTheReason() {
    String text = """
        vllm:num_requests_running{engine="0",model_name="m"} 2.0
        vllm:num_requests_waiting{engine="0",model_name="m"} 6.0
        vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 0.0
        vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="deferred",sub_reason="capacity"} 6.0
        """;
    assertEquals(0.0, EngineLoad.parse("D0", text, 5, "r").queued(),
        "six legs pulling their KV (reason deferred) are no queue, whatever another label says");
  }

  @Test
  void labelOrderAndSubstringsOfTheReason() {
    String text = """
        vllm:num_requests_running{model_name="m"} 0
        vllm:num_requests_waiting{model_name="m"} 9
        vllm:num_requests_waiting_by_reason{reason="capacity",model_name="m"} 2
        vllm:num_requests_waiting_by_reason{model_name="m",reason="capacity_soon"} 3
        vllm:num_requests_waiting_by_reason{model_name="m",reason="over_capacity"} 4
        """;
    assertEquals(2.0, EngineLoad.parse("D0", text, 5, "r").queued(),
        "the reason label first counts; reasons that merely contain capacity do not");
  }

  @Test
  void hostileCapacityValuesNeverMakeAQueueLargerThanTheWaitingOrNegative() {
    for (String bad : new String[] {"NaN", "+Inf", "-Inf", "-3", "1e300"}) {
      String text = "vllm:num_requests_running 1\nvllm:num_requests_waiting 4\n"
          + "vllm:num_requests_waiting_by_reason{reason=\"capacity\"} " + bad + "\n";
      double queued = EngineLoad.parse("D0", text, 5, "r").queued();
      assertEquals(true, queued >= 0 && queued <= 4, bad + ": queued " + queued);
    }
  }

  @Test
  void samplesWithTheTimestampTheTextFormatAllowsAreReadByTheirValue() {
    String text = """
        vllm:num_requests_running{model_name="m"} 2 1733461200000
        vllm:num_requests_waiting{model_name="m"} 6 1733461200000
        vllm:num_requests_waiting_by_reason{model_name="m",reason="capacity"} 1 1733461200000
        vllm:num_requests_waiting_by_reason{model_name="m",reason="deferred"} 5 1733461200000
        """;
    EngineLoad load = EngineLoad.parse("D0", text, 5, "r");
    assertEquals(null, load.error(), "a sample's optional timestamp is no value");
    assertEquals(6.0, load.waiting());
    assertEquals(1.0, load.queued());
  }

  @Test
  void aSharedReadingWithAHostileQueue() {
    JsonObject base = new JsonObject().put("iid", "D0").put("read_at_ms", 1).put("running", 1).put("waiting", 5);
    assertEquals(0.0, EngineLoad.fromJson(base.copy().put("queued", -4)).queued(), "negative: none");
    assertEquals(null, EngineLoad.fromJson(base.copy().put("queued", "lots")), "a string: no reading");
  }
}
