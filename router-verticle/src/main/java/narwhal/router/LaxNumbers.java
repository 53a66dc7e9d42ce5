package narwhal.router;

import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The numbers vLLM's request validation (pydantic, lax mode) accepts for its integer and float fields: a boolean
 * ({@code true} is 1), an integral float ({@code 8.0}) or a decimal string ({@code "8"}, {@code " 8 "}, {@code "8.0"},
 * {@code "1_000"}) is an integer; a number, a boolean or a numeric string ({@code "0.5"}, {@code "1e3"}, {@code "inf"})
 * a float. The router validates what it relies on with the same rules and forwards the client's body untouched.
 */
final class LaxNumbers {
  /** pydantic's integer string: digits (underscores between them), an optional sign, a fraction of zeros only. */
  private static final Pattern INTEGER = Pattern.compile("([+-]?)(\\d{1,18}(?:_\\d+)*)(?:\\.0+)?");
  /** Python's {@code float()} string: decimal or exponent form (underscores between digits), or inf/infinity/nan. */
  private static final Pattern FLOAT = Pattern.compile("[+-]?(?:(?:\\d+(?:_\\d+)*)?\\.?\\d+(?:_\\d+)*|\\d+(?:_\\d+)*\\.)"
      + "(?:[eE][+-]?\\d+(?:_\\d+)*)?|[+-]?(?:inf|infinity|nan)");

  private LaxNumbers() {
  }

  /** The integer {@code v} stands for, or null when pydantic would refuse it as an integer. */
  static Long integer(Object v) {
    if (v instanceof Integer || v instanceof Long) return ((Number) v).longValue();
    if (v instanceof Boolean b) return b ? 1L : 0L;
    if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      return d == Math.rint(d) && Math.abs(d) < 9.0e15 ? (long) d : null;
    }
    if (v instanceof String s) {
      java.util.regex.Matcher m = INTEGER.matcher(s.strip());
      if (!m.matches()) return null;
      String digits = m.group(2).replace("_", "");
      if (digits.length() > 18) return null;
      long n = Long.parseLong(digits);
      return m.group(1).equals("-") ? -n : n;
    }
    return null;
  }

  /** Whether pydantic would take {@code v} as a float. */
  static boolean isNumber(Object v) {
    if (v instanceof Number || v instanceof Boolean) return true;
    return v instanceof String s && FLOAT.matcher(s.strip().toLowerCase(Locale.ROOT)).matches();
  }
}
