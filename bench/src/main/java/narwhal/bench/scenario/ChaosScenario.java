package narwhal.bench.scenario;

import narwhal.bench.BenchEnv;
import narwhal.bench.Scenario;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * R8–R12: what production does to a cluster, one fault per phase, each on processes of its own that it stops before
 * the next phase starts (a phase's replicas would otherwise load the next one's machine): {@code kill} (R8, a replica
 * SIGKILLed behind haproxy), {@code partition} (R9, two replicas cut apart in network namespaces; root, {@code ip}
 * and {@code nft}, else skipped saying so), {@code freeze} (R10, a replica SIGSTOPped), {@code full-disk} (R11, the
 * journal's disk full) and {@code readiness} (R12, {@code /ready} and {@code /health} under 1,000 streams while a
 * sibling replica's JVM starts). A new fault is one more {@link Phase} in {@link #PHASES}. The system property
 * {@value #PHASES_PROPERTY} (comma-separated phase names) runs some of them only.
 */
public final class ChaosScenario implements Scenario {
  /** The system property naming the phases to run (all when unset). */
  public static final String PHASES_PROPERTY = "narwhal.bench.chaos_phases";

  /** One fault: sets up what it needs in its {@link Scope}, fills the report (layout, tables, verdicts under its target). */
  interface Phase {
    /** Its name in {@value #PHASES_PROPERTY} and in the report ("kill", "readiness", …). */
    String name();

    void run(BenchEnv env, Scope scope) throws Exception;
  }

  /** The phases, in the order they run, by target. */
  static final List<Phase> PHASES = List.of(new ChaosKillPhase(), new ChaosPartitionPhase(), new ChaosFreezePhase(), new ChaosFullDiskPhase(),
      new ChaosReadinessPhase());

  /** What one phase started, closed in reverse order when the phase ends, whatever happens. */
  static final class Scope implements AutoCloseable {
    private final Deque<AutoCloseable> owned = new ArrayDeque<>();

    <T extends AutoCloseable> T own(T resource) {
      owned.push(resource);
      return resource;
    }

    @Override
    public void close() {
      while (!owned.isEmpty()) {
        try {
          owned.pop().close();
        } catch (Throwable e) {
          System.out.println("note: cleanup: " + e);
        }
      }
    }
  }

  @Override
  public String name() {
    return "chaos";
  }

  @Override
  public String summary() {
    return "R8–R12: faults production brings (kill -9 behind haproxy, a partition, a frozen replica, a full disk, readiness under load), one phase each";
  }

  @Override
  public void run(BenchEnv env) throws Exception {
    List<Phase> phases = selected(System.getProperty(PHASES_PROPERTY));
    env.report().parameter("phases", phases.stream().map(Phase::name).collect(Collectors.joining(",")));
    for (Phase phase : phases) {
      env.progress().say("phase " + phase.name());
      try (Scope scope = new Scope()) {
        phase.run(env, scope);
      }
    }
  }

  /** The phases {@code names} lists (comma-separated), in {@link #PHASES}' order; all of them for null or blank. */
  static List<Phase> selected(String names) {
    if (names == null || names.isBlank()) return PHASES;
    Set<String> wanted = Arrays.stream(names.split(",")).map(String::strip).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
    List<Phase> out = PHASES.stream().filter(p -> wanted.contains(p.name())).toList();
    Set<String> known = PHASES.stream().map(Phase::name).collect(Collectors.toSet());
    List<String> unknown = wanted.stream().filter(n -> !known.contains(n)).sorted().toList();
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("-D" + PHASES_PROPERTY + ": unknown phase(s) " + unknown + "; expected some of "
          + PHASES.stream().map(Phase::name).toList());
    }
    return out;
  }
}
