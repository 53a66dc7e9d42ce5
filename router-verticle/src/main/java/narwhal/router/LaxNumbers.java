package narwhal.router;

/**
 * The numbers vLLM's request validation (pydantic, lax mode) accepts for its integer and float fields: an integral
 * float ({@code 8.0}) or a decimal string ({@code "8"}) is an integer, a numeric string a float. The router
 * validates what it relies on with the same rules and forwards the client's body untouched.
 */
final class LaxNumbers {
  private LaxNumbers() {
  }

  /** The integer {@code v} stands for, or null when pydantic would refuse it as an integer. */
  static Long integer(Object v) {
    if (v instanceof Integer || v instanceof Long) return ((Number) v).longValue();
    if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      return d == Math.rint(d) && Math.abs(d) < 9.0e15 ? (long) d : null;
    }
    if (v instanceof String s && s.strip().matches("[+-]?\\d{1,18}")) return Long.parseLong(s.strip().replace("+", ""));
    return null;
  }

  /** Whether pydantic would take {@code v} as a float. */
  static boolean isNumber(Object v) {
    if (v instanceof Number) return true;
    if (!(v instanceof String s)) return false;
    try {
      Double.parseDouble(s.strip());
      return true;
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
