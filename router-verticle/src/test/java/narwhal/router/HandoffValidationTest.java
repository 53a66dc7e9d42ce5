package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each invalid handoff a producer can return ends with 502 before any decode request is made. */
@Timeout(60)
class HandoffValidationTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clear() {
    h.resetEngines();
  }

  @ParameterizedTest
  @CsvSource({
      "descriptor_missing,,missing descriptor",
      "descriptor_no_engine_id,,missing engine identity",
      "descriptor_bad_block_ids,strings,malformed block ids",
      "descriptor_bad_block_ids,floats,malformed block ids",
      "descriptor_bad_block_ids,booleans,malformed block ids",
      "descriptor_bad_block_ids,negative,malformed block ids",
      "descriptor_bad_block_ids,not_list,malformed block ids",
      "descriptor_bad_block_ids,mixed,malformed block ids",
      "descriptor_foreign_connector,mooncake,connector mismatch",
      "descriptor_foreign_connector,sglang,connector mismatch",
      "descriptor_foreign_connector,lmcache,connector mismatch",
      "descriptor_wrong_side_channel,,endpoint mismatch",
  })
  void invalidDescriptorIs502AndNoDecodeRequest(String kind, String variant, String reason) throws Exception {
    JsonObject rule = new JsonObject().put("kind", kind).put("phase", "prefill");
    if (variant != null) rule.put("variant", variant);
    h.engine("P0").faults().add(rule);
    for (boolean stream : new boolean[] {false, true}) {
      h.engine("P0").faults().clear();
      h.engine("P0").faults().add(rule.copy());
      RouterHarness.Reply reply = h.post("/v1/completions", DisaggregatedExecutionTest.completion(stream));
      assertEquals(502, reply.status(), reply.body());
      JsonObject error = reply.error();
      assertTrue(error.getString("message").startsWith("invalid handoff descriptor: " + reason), error.encode());
      assertEquals("prefill", error.getString("type"));
      assertFalse(error.getString("message").contains("127.0.0.1"), "no engine host in client errors");
    }
    assertTrue(h.engine("D0").requests().isEmpty(), "the consumer received no request");
    assertEquals(0, h.reservations());
  }
}
