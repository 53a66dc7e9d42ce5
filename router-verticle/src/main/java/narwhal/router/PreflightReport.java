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

  /** The engines among {@code iids} that failed one of their own checks (health, model, contract), in fleet order. */
  public List<String> failedEngines(List<String> iids) {
    return iids.stream().filter(iid -> checks.stream().anyMatch(c -> !c.ok() && c.target().equals(iid))).toList();
  }

  public String table() {
    StringBuilder out = new StringBuilder(String.format("%-12s %-12s %-4s %s%n", "engine", "check", "", "detail"));
    for (Check c : checks) out.append(c.line()).append(System.lineSeparator());
    out.append(passed() ? "preflight passed" : "preflight FAILED: " + checks.stream().filter(c -> !c.ok()).count() + " check(s)");
    return out.toString();
  }
}
