package narwhal.router;

/**
 * Strict UTF-8 (RFC 3629) over bytes, without decoding them: no overlong forms, no encoded surrogates, nothing past
 * U+10FFFF, no truncated sequence. The same bytes a {@code CharsetDecoder} reporting malformed input refuses.
 */
final class Utf8 {
  private Utf8() {
  }

  static boolean valid(byte[] b, int from, int to) {
    int i = from;
    while (i < to) {
      int c = b[i] & 0xff;
      if (c < 0x80) {
        i++;
        continue;
      }
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
        return false;
      }
      if (i + need >= to) return false;
      int c1 = b[i + 1] & 0xff;
      if (c1 < min2 || c1 > max2) return false;
      for (int k = 2; k <= need; k++) {
        if ((b[i + k] & 0xc0) != 0x80) return false;
      }
      i += need + 1;
    }
    return true;
  }
}
