package narwhal.engines.connector;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DescriptorValidatorTest {
  private static final HandoffExpectations NIXL = HandoffExpectations.nixlPull();

  private static JsonObject valid() {
    return new JsonObject().put("do_remote_prefill", true).put("do_remote_decode", false).put("remote_engine_id", "e-1")
        .put("remote_request_id", "cmpl-x-1").put("remote_block_ids", new JsonArray().add(new JsonArray().add(1).add(2)))
        .put("remote_host", "10.0.0.5").put("remote_port", 5600).put("tp_size", 1).put("transfer_mode", "pull");
  }

  private static Optional<String> check(Object descriptor) {
    return DescriptorValidator.check(descriptor, NIXL);
  }

  @Test
  void validDescriptorsPass() {
    assertTrue(check(valid()).isEmpty());
    assertTrue(check(valid().put("remote_block_ids", new JsonArray())).isEmpty(), "[] is legal");
    assertTrue(check(valid().put("remote_block_ids", new JsonArray().add(new JsonArray()))).isEmpty(), "[[]] is legal");
    assertTrue(check(valid().put("remote_block_ids", new JsonArray().add(3).add(4))).isEmpty(), "flat list of older engines");
    assertTrue(check(valid().put("x_vendor", new JsonObject().put("a", 1))).isEmpty(), "unknown fields are fine");
  }

  @Test
  void everyRejectionReason() {
    assertEquals("missing descriptor", check(null).orElseThrow());
    assertEquals("missing descriptor", check("a string").orElseThrow());
    assertEquals("missing engine identity", check(valid().put("remote_engine_id", "")).orElseThrow());
    assertEquals("missing engine identity", check(valid().put("remote_engine_id", 7)).orElseThrow());
    for (Object bad : new Object[] {null, "1,2", new JsonArray().add("1"), new JsonArray().add(1.5), new JsonArray().add(true),
        new JsonArray().add(-1), new JsonArray().add(new JsonArray().add(1)).add(2), new JsonArray().add(new JsonArray().add(new JsonArray()))}) {
      assertEquals("malformed block ids", check(valid().put("remote_block_ids", bad)).orElseThrow(), String.valueOf(bad));
    }
    for (String foreign : new String[] {"transfer_id", "bootstrap_room", "bootstrap_host", "disagg_spec", "remote_bootstrap_addr"}) {
      assertTrue(check(valid().put(foreign, "x")).orElseThrow().startsWith("connector mismatch"), foreign);
    }
    assertTrue(check(valid().put("transfer_mode", "push")).orElseThrow().startsWith("connector mismatch"));
    assertTrue(DescriptorValidator.check(valid(), new HandoffExpectations("pull", "mooncake", "nixl", null)).orElseThrow()
        .startsWith("connector mismatch"));
    String side = DescriptorValidator.check(valid(), NIXL.withSideChannel("10.0.0.5:5601")).orElseThrow();
    assertTrue(side.startsWith("endpoint mismatch"));
    assertTrue(!side.contains("10.0.0.5"), "reasons name no host");
    assertTrue(DescriptorValidator.check(valid(), NIXL.withSideChannel("10.0.0.5:5600")).isEmpty());
  }

  @Test
  void endpointMismatchAndDetachedParameters() {
    JsonObject descriptor = valid();
    PrefillResult result = new PrefillResult(descriptor, "http://p", "/v1/completions", "rid-a1-prefill", Instant.now(), 1, 2);
    assertTrue(DescriptorValidator.checkEndpoint(result, "/v1/chat/completions").orElseThrow().startsWith("endpoint mismatch"));
    assertTrue(DescriptorValidator.checkEndpoint(result, "/v1/completions").isEmpty());
    JsonObject copy = result.parameters();
    assertNotSame(copy, result.parameters());
    copy.getJsonArray("remote_block_ids").getJsonArray(0).add(99);
    copy.put("remote_engine_id", "changed");
    descriptor.put("remote_engine_id", "changed too");
    assertEquals(valid(), result.parameters(), "neither the caller's object nor a returned copy reaches inside the result");
    assertTrue(result.parameters().getValue("remote_port") instanceof Integer, "integers stay integers");
  }
}
