package narwhal.bench.load;

import io.vertx.core.buffer.Buffer;
import narwhal.engines.sse.SseEvent;
import narwhal.engines.sse.SseReader;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static narwhal.bench.load.SseEventKindsTest.Kind.DONE;
import static narwhal.bench.load.SseEventKindsTest.Kind.ERROR;
import static narwhal.bench.load.SseEventKindsTest.Kind.METADATA;
import static narwhal.bench.load.SseEventKindsTest.Kind.OUTPUT;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The frames bench's load generator meets, as engine-client's {@link SseReader} (what {@link SseTimer} reads with)
 * classifies them; the cases and assertions of bench's former frame classifier, kept as they were.
 */
class SseEventKindsTest {
  enum Kind { OUTPUT, METADATA, ERROR, DONE }

  /** One event's data, fed as a relay reader gets it, and the kind of the one event it makes. */
  private static final class SseFrames {
    static Kind classify(String data) {
      List<SseEvent> events = new ArrayList<>();
      new SseReader(SseTimer.MAX_EVENT_BYTES, events::add).feed(Buffer.buffer("data: " + data + "\n\n"));
      assertEquals(1, events.size(), data);
      SseEvent event = events.get(0);
      if (event instanceof SseEvent.Output) return OUTPUT;
      if (event instanceof SseEvent.Metadata) return METADATA;
      if (event instanceof SseEvent.ErrorFrame) return ERROR;
      return DONE;
    }
  }

  @Test
  void completionFramesWithTextAreOutput() {
    assertEquals(OUTPUT, SseFrames.classify("{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" river\","
        + "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}"));
    assertEquals(OUTPUT, SseFrames.classify("{\"choices\": [{\"text\": \" \"}]}"));
  }

  @Test
  void emptyTextRoleOnlyAndUsageFramesAreMetadata() {
    assertEquals(METADATA, SseFrames.classify("{\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":null}]}"));
    assertEquals(METADATA, SseFrames.classify("{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
        + "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}"));
    assertEquals(METADATA, SseFrames.classify("{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}"));
    assertEquals(METADATA, SseFrames.classify("{\"choices\":[{\"delta\":{\"tool_calls\":[]}}]}"));
  }

  @Test
  void chatContentReasoningAndToolCallsAreOutput() {
    assertEquals(OUTPUT, SseFrames.classify("{\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}"));
    assertEquals(OUTPUT, SseFrames.classify("{\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}"));
    assertEquals(OUTPUT, SseFrames.classify("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}"));
  }

  @Test
  void quotedKeysInsideGeneratedTextDoNotCount() {
    assertEquals(METADATA, SseFrames.classify("{\"choices\":[{\"delta\":{\"content\":\"\"}}],\"x\":\"\\\"text\\\":\\\"a\\\"\"}"));
  }

  @Test
  void errorFramesAndDone() {
    assertEquals(ERROR, SseFrames.classify("{\"error\":{\"message\":\"engine went silent\",\"type\":\"decode\",\"code\":504}}"));
    assertEquals(ERROR, SseFrames.classify("{\"object\":\"error\",\"error\": {\"message\":\"x\"}}"));
    assertEquals(DONE, SseFrames.classify("[DONE]"));
    assertEquals(DONE, SseFrames.classify(" [DONE] "));
  }
}
