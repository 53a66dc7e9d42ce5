package narwhal.common.bus;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class LegsSentTest {
  @Test
  void itsJsonComesBackAsTheSameCounts() {
    LegsSent sent = new LegsSent("r1", Map.of("P0", new LegsSent.Count(1_700_000_000_000L, 3), "D0", new LegsSent.Count(0, 0)));
    assertEquals(sent, LegsSent.fromJson(new JsonObject(sent.toJson().encode())));
  }

  @Test
  void anEntryThatIsNotAWholeNonNegativeCountIsLeftOut() {
    JsonObject engines = new JsonObject()
        .put("ok", new JsonObject().put("reading_ms", 5).put("sent", 2))
        .put("negative", new JsonObject().put("reading_ms", 5).put("sent", -1))
        .put("fraction", new JsonObject().put("reading_ms", 5).put("sent", 1.5))
        .put("text", new JsonObject().put("reading_ms", "5").put("sent", 1))
        .put("huge", new JsonObject().put("reading_ms", 5).put("sent", 1L << 40))
        .put("missing", new JsonObject().put("sent", 1))
        .put("scalar", 7);
    LegsSent sent = LegsSent.fromJson(new JsonObject().put("origin", "r2").put("engines", engines));
    assertEquals(Map.of("ok", new LegsSent.Count(5, 2)), sent.engines());
  }

  @Test
  void aBodyWithoutAnOriginIsNoMessage() {
    assertNull(LegsSent.fromJson(new JsonObject().put("engines", new JsonObject())));
    assertNull(LegsSent.fromJson(new JsonObject().put("origin", "")));
    assertNull(LegsSent.fromJson(null));
    assertEquals(Map.of(), LegsSent.fromJson(new JsonObject().put("origin", "r3").put("engines", "nope")).engines());
  }
}
