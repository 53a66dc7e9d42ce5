package narwhal.bench.load;

import org.junit.jupiter.api.Test;

import static narwhal.bench.load.SseFrames.Kind.DONE;
import static narwhal.bench.load.SseFrames.Kind.ERROR;
import static narwhal.bench.load.SseFrames.Kind.METADATA;
import static narwhal.bench.load.SseFrames.Kind.OUTPUT;
import static org.junit.jupiter.api.Assertions.assertEquals;

class SseFramesTest {

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
