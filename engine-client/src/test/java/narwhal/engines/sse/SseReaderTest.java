package narwhal.engines.sse;

import io.vertx.core.buffer.Buffer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

class SseReaderTest {
  private final List<SseEvent> events = new ArrayList<>();
  private final SseReader reader = new SseReader(1024, events::add);

  @Test
  void tellsOutputFromMetadataFromErrorsFromDone() {
    reader.feed(Buffer.buffer(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
            + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tusk\"}}]}\n\n"
            + "data: {\"choices\":[{\"index\":0,\"text\":\" ice\",\"finish_reason\":null}]}\n\n"
            + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n"
            + "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}\n\n"
            + "data: {\"error\":{\"message\":\"boom\",\"code\":503}}\n\n"
            + "data: [DONE]\n\n"));
    assertInstanceOf(SseEvent.Metadata.class, events.get(0));
    assertEquals(" tusk", ((SseEvent.Output) events.get(1)).text());
    assertEquals(" ice", ((SseEvent.Output) events.get(2)).text());
    assertInstanceOf(SseEvent.Metadata.class, events.get(3));
    assertInstanceOf(SseEvent.Output.class, events.get(4), "a tool-call delta is output");
    assertEquals("boom", ((SseEvent.ErrorFrame) events.get(5)).error().getString("message"));
    assertInstanceOf(SseEvent.Done.class, events.get(6));
  }

  @Test
  void chunkBoundariesAnywhereIncludingInsideUtf8() {
    byte[] bytes = "data: {\"choices\":[{\"text\":\"caf\u00e9 \u2603\"}]}\r\n\r\ndata: [DONE]\n\n".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    for (byte b : bytes) reader.feed(Buffer.buffer(new byte[] {b}));
    assertEquals("caf\u00e9 \u2603", ((SseEvent.Output) events.get(0)).text());
    assertInstanceOf(SseEvent.Done.class, events.get(1));
  }

  @Test
  void commentsAndOtherFieldsAreIgnored() {
    reader.feed(Buffer.buffer(": keep-alive\n\nevent: message\nid: 3\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\n"));
    assertEquals(1, events.size());
  }

  @Test
  void oversizedEventsAndNonJsonFramesAreRefused() {
    assertThrows(SseFormatException.class, () -> reader.feed(Buffer.buffer("data: " + "x".repeat(2000))));
    assertThrows(SseFormatException.class, () -> new SseReader(1024, e -> { }).feed(Buffer.buffer("data: nope\n\n")));
  }
}
