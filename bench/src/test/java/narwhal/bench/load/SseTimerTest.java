package narwhal.bench.load;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SseTimerTest {
  static String token(String text) {
    return "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}]}\n\n";
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void timesFirstTokenAndGapsFromTheGivenClock() {
    SseTimer t = new SseTimer(1_000);
    t.feed(utf8(token(" a")), 1_500);
    t.feed(utf8(token(" b")), 1_515);
    t.feed(utf8(token(" c") + "data: [DONE]\n\n"), 1_535);
    assertEquals(500, t.firstToken());
    assertEquals(500, t.firstChunk());
    assertEquals(3, t.tokens());
    assertArrayEquals(new long[] {15, 20}, t.gaps());
    assertTrue(t.done());
    assertNull(t.error());
  }

  @Test
  void anEventCountsWhenItsBlankLineArrivesWhereverChunksSplit() {
    byte[] stream = utf8(token(" one") + token(" two") + "data: [DONE]\n\n");
    SseTimer t = new SseTimer(0);
    int firstBlank = token(" one").length() - 1;
    for (int i = 0; i < stream.length; i++) t.feed(new byte[] {stream[i]}, i);
    assertEquals(firstBlank, t.firstToken());
    assertEquals(2, t.tokens());
    assertEquals(token(" two").length(), t.gaps()[0]);
    assertTrue(t.done());
  }

  @Test
  void crlfLinesAndMultiLineData() {
    SseTimer t = new SseTimer(0);
    t.feed(utf8("data: {\"choices\":[{\"text\":\r\ndata: \"x\"}]}\r\n\r\ndata: [DONE]\r\n\r\n"), 7);
    assertEquals(1, t.tokens());
    assertEquals(7, t.firstToken());
    assertTrue(t.done());
  }

  @Test
  void chatRoleFrameIsNotTheFirstToken() {
    SseTimer t = new SseTimer(0);
    t.feed(utf8("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"), 10);
    t.feed(utf8("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"), 30);
    assertEquals(30, t.firstToken());
    assertEquals(10, t.firstChunk());
    assertEquals(1, t.metadataFrames());
    assertEquals(1, t.tokens());
    assertFalse(t.done());
  }

  @Test
  void multiByteCharactersSplitAcrossChunks() {
    byte[] stream = utf8(token("naïve ☃") + "data: [DONE]\n\n");
    int split = 0;
    while (stream[split] != (byte) 0xC3) split++;
    SseTimer t = new SseTimer(0);
    byte[] a = java.util.Arrays.copyOfRange(stream, 0, split + 1);
    byte[] b = java.util.Arrays.copyOfRange(stream, split + 1, stream.length);
    t.feed(a, 1);
    t.feed(b, 2);
    assertEquals(1, t.tokens());
    assertTrue(t.done());
  }

  @Test
  void errorFrameEndsWithAnErrorNotDone() {
    SseTimer t = new SseTimer(0);
    t.feed(utf8(token(" a") + "data: {\"error\":{\"message\":\"silent\",\"type\":\"decode\",\"code\":504}}\n\n"), 5);
    assertEquals(1, t.tokens());
    assertNotNull(t.error());
    assertTrue(t.error().contains("silent"));
    assertFalse(t.done());
  }

  @Test
  void commentsAndOtherFieldsAreIgnored() {
    SseTimer t = new SseTimer(0);
    t.feed(utf8(": keep-alive\n\nevent: message\nid: 3\n" + token(" a")), 4);
    assertEquals(1, t.tokens());
    assertEquals(0, t.metadataFrames());
  }

  @Test
  void anEndlessEventIsCutOff() {
    SseTimer t = new SseTimer(0);
    byte[] huge = utf8("data: " + "x".repeat(SseTimer.MAX_EVENT_BYTES + 10));
    t.feed(huge, 1);
    assertNotNull(t.error());
    assertEquals(0, t.tokens());
  }
}
