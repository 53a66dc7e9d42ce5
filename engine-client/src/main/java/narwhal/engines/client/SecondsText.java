package narwhal.engines.client;

/** Formats a millisecond bound as the seconds an operator configured: 2500 → "2.5", 10000 → "10". */
final class SecondsText {
  private SecondsText() {
  }

  static String of(long millis) {
    if (millis % 1000 == 0) return Long.toString(millis / 1000);
    String s = Double.toString(millis / 1000.0);
    return s.endsWith(".0") ? s.substring(0, s.length() - 2) : s;
  }
}
