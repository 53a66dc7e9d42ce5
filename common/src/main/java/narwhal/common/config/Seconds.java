package narwhal.common.config;

/** Conversions for the seconds-valued keys, which are doubles in the fleet file. */
final class Seconds {

  private Seconds() {
  }

  static long toMillis(double seconds) {
    return Math.round(seconds * 1000.0);
  }

  /** A whole number as a long (written {@code 600}, not {@code 600.0}); anything else as a double. */
  static Number toJson(double value) {
    if (value == Math.rint(value) && Math.abs(value) < 1e15) {
      return (long) value;
    }
    return value;
  }
}
