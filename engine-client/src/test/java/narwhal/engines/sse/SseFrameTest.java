package narwhal.engines.sse;

import io.vertx.core.buffer.Buffer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** What the reader keeps of a frame without a JSON tree: the relayed bytes, finish reason, usage, text. */
class SseFrameTest {
  private final List<SseEvent> events = new ArrayList<>();
  private final SseReader reader = new SseReader(4096, events::add);

  private SseEvent only(String stream) {
    reader.feed(Buffer.buffer(stream));
    assertEquals(1, events.size(), String.valueOf(events));
    return events.get(0);
  }

  @Test
  void theFrameIsRelayedAsTheEngineWroteIt() {
    String data = "{\"id\":\"c\",\"choices\":[{\"text\":\"\\u00e9\\\"x\",\"finish_reason\":null}] , \"n\": 1.50}";
    SseEvent.Output out = assertInstanceOf(SseEvent.Output.class, only("data:" + data + "\r\n\r\n"));
    assertEquals("data: " + data + "\n\n", out.frame().wire().toString());
    assertEquals(data, out.frame().data());
    assertEquals("\u00e9\"x", out.text());
  }

  @Test
  void finishReasonIsTheLastChoiceStringAndUsageTheObject() {
    SseEvent.Output out = assertInstanceOf(SseEvent.Output.class, only("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"stop\"},"
        + "{\"delta\":{\"reasoning\":\"r\",\"content\":\"c\"},\"finish_reason\":\"length\"},{\"finish_reason\":null}],"
        + "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"));
    assertEquals("arc", out.text());
    assertEquals("length", out.frame().finishReason());
    assertEquals(2, out.frame().usage().getInteger("completion_tokens"));
  }

  @Test
  void aFrameWithoutThemHasNoFinishReasonOrUsage() {
    SseEvent.Metadata meta = assertInstanceOf(SseEvent.Metadata.class,
        only("data: {\"choices\":[{\"delta\":{\"tool_calls\":[]},\"finish_reason\":null}],\"usage\":null}\n\n"));
    assertNull(meta.frame().finishReason());
    assertNull(meta.frame().usage());
  }

  @Test
  void aRepeatedKeyCountsWithItsLastValueAsInAJsonObject() {
    assertInstanceOf(SseEvent.Metadata.class, only("data: {\"choices\":[{\"text\":\"a\",\"text\":\"\"}]}\n\n"));
    events.clear();
    assertEquals("b", ((SseEvent.Output) only("data: {\"choices\":[{\"text\":\"a\"}],\"choices\":[{\"text\":\"b\"}]}\n\n")).text());
    events.clear();
    assertInstanceOf(SseEvent.Metadata.class, only("data: {\"error\":{\"message\":\"x\"},\"error\":null}\n\n"));
  }

  @Test
  void valuesOfTheWrongTypeAreNotOutput() {
    assertInstanceOf(SseEvent.Metadata.class,
        only("data: {\"choices\":[{\"text\":7,\"delta\":{\"content\":null,\"tool_calls\":{}}},3,\"x\"],\"error\":\"no\"}\n\n"));
  }

  @Test
  void multiLineDataIsJoinedWithNewlines() {
    SseEvent.Output out = assertInstanceOf(SseEvent.Output.class, only("data: {\"choices\":\ndata: [{\"text\":\"a\"}]}\n\n"));
    assertEquals("a", out.text());
    assertEquals("{\"choices\":\n[{\"text\":\"a\"}]}", out.frame().data());
  }

  @Test
  void anythingButOneJsonObjectIsRefused() {
    for (String data : List.of("", "[1]", "\"s\"", "null", "{}{}", "{} x", "{\"a\":", "{\"choices\":[{\"text\":\"a\"}]")) {
      SseReader fresh = new SseReader(4096, e -> { });
      assertThrows(SseFormatException.class, () -> fresh.feed(Buffer.buffer("data: " + data + "\n\n")), data);
    }
  }

  @Test
  void doneMayBePaddedAndCommentsAreAllowedAsVertxAllows() {
    reader.feed(Buffer.buffer("data: {/* c */\"choices\":[]}\n\ndata:  [DONE] \n\n"));
    assertInstanceOf(SseEvent.Metadata.class, events.get(0));
    assertInstanceOf(SseEvent.Done.class, events.get(1));
  }

  @Test
  void largeEventsDoNotLoseBytes() {
    String text = "y".repeat(3000);
    SseEvent.Output out = assertInstanceOf(SseEvent.Output.class, only("data: {\"choices\":[{\"text\":\"" + text + "\"}]}\n\n"));
    assertEquals(text, out.text());
    events.clear();
    assertEquals("z", ((SseEvent.Output) only("data: {\"choices\":[{\"text\":\"z\"}]}\n\n")).text());
  }
}
