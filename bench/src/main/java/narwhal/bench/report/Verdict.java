package narwhal.bench.report;

import io.vertx.core.json.JsonObject;

/**
 * A target of docs/benchmarks.md checked by a run: what was measured against what was asked. A performance target can
 * be MET or MISSED (a miss is a finding, not a failure of the run); a correctness check (R2, R5) that does
 * not hold is VIOLATED and makes the command exit 3. INFO carries a figure with no target.
 */
public record Verdict(String target, String what, String measured, String threshold, Status status) {

  public enum Status { MET, MISSED, VIOLATED, HELD, INFO }

  public static Verdict perf(String target, String what, String measured, String threshold, boolean met) {
    return new Verdict(target, what, measured, threshold, met ? Status.MET : Status.MISSED);
  }

  public static Verdict check(String target, String what, String measured, String threshold, boolean holds) {
    return new Verdict(target, what, measured, threshold, holds ? Status.HELD : Status.VIOLATED);
  }

  public static Verdict info(String target, String what, String measured) {
    return new Verdict(target, what, measured, "—", Status.INFO);
  }

  public JsonObject toJson() {
    return new JsonObject().put("target", target).put("what", what).put("measured", measured).put("threshold", threshold)
        .put("status", status.name());
  }
}
