package narwhal.engines.json;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Utf8} refuses exactly what the JDK's strict UTF-8 decoder refuses, on text, damaged text and random bytes. */
class Utf8Test {
  private static final String[] PIECES = {"a", "caf\u00e9", "\u6f22", "\ud83d\ude00", "\u0000", "\u07ff", "\u0800", "\uffff",
      "\ud7ff", "\ue000", "\udbff\udfff", "{\"prompt\": \"x\"}"};

  @Test
  void agreesWithTheJdksStrictDecoder() {
    Random random = new Random(13);
    int valid = 0;
    for (int n = 0; n < 50_000; n++) {
      byte[] bytes;
      if (n % 3 == 0) {
        bytes = new byte[random.nextInt(8)];
        random.nextBytes(bytes);
      } else {
        StringBuilder s = new StringBuilder();
        for (int k = random.nextInt(6); k > 0; k--) s.append(PIECES[random.nextInt(PIECES.length)]);
        bytes = s.toString().getBytes(StandardCharsets.UTF_8);
        if (n % 3 == 1 && bytes.length > 0) bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
      }
      boolean expected = jdk(bytes);
      if (expected) valid++;
      byte[] framed = new byte[bytes.length + 4];
      System.arraycopy(bytes, 0, framed, 2, bytes.length);
      assertEquals(expected, Utf8.valid(framed, 2, 2 + bytes.length), () -> java.util.HexFormat.of().formatHex(bytes));
    }
    assertTrue(valid > 10_000 && valid < 45_000, "both kinds are generated: " + valid);
  }

  private static boolean jdk(byte[] bytes) {
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }
}
