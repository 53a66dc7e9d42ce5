package narwhal.engines.json;

/**
 * Strict UTF-8 (RFC 3629) over bytes, without decoding them: no overlong forms, no encoded surrogates, nothing past
 * U+10FFFF, no truncated sequence. The same bytes a {@code CharsetDecoder} reporting malformed input refuses. Used for
 * client bodies and, sequence by sequence, by the SSE frame scanner.
 */
public final class Utf8 {
  private Utf8() {
  }

  public static boolean valid(byte[] b, int from, int to) {
    int i = from;
    while (i < to) {
      int n = sequence(b, i, to);
      if (n == 0) return false;
      i += n;
    }
    return true;
  }

  /** The length of the well-formed sequence at {@code b[i]} (1 for ASCII), or 0 when it is malformed or cut at {@code to}. */
  public static int sequence(byte[] b, int i, int to) {
    int c = b[i] & 0xff;
    if (c < 0x80) return 1;
    int need;
    int min2 = 0x80;
    int max2 = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c == 0xe0) min2 = 0xa0;
      if (c == 0xed) max2 = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c == 0xf0) min2 = 0x90;
      if (c == 0xf4) max2 = 0x8f;
    } else {
      return 0;
    }
    if (i + need >= to) return 0;
    int c1 = b[i + 1] & 0xff;
    if (c1 < min2 || c1 > max2) return 0;
    for (int k = 2; k <= need; k++) {
      if ((b[i + k] & 0xc0) != 0x80) return 0;
    }
    return need + 1;
  }
}
