package narwhal.router;

import java.util.List;

/** The outcome of a {@link Preflight}: one line per check, readable as a table. */
public record PreflightReport(List<Check> checks) {

  /** One check of one engine or engine pair. */
  public record Check(String target, String check, boolean ok, String detail) {
    public String line() {
      return String.format("%-12s %-12s %-4s %s", target, check, ok ? "ok" : "FAIL", detail);
    }
  }

  public boolean passed() {
    return checks.stream().allMatch(Check::ok);
  }

  public String table() {
    StringBuilder out = new StringBuilder(String.format("%-12s %-12s %-4s %s%n", "engine", "check", "", "detail"));
    for (Check c : checks) out.append(c.line()).append(System.lineSeparator());
    out.append(passed() ? "preflight passed" : "preflight FAILED: " + checks.stream().filter(c -> !c.ok()).count() + " check(s)");
    return out.toString();
  }
}
