package narwhal.placement;

import narwhal.common.config.EngineConfig;
import narwhal.common.config.PlacementConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.Phase;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * CPU per placement decision, measured on {@link PlacementTable} itself (the placement benchmark): a fleet of
 * {@code engines} (half prefill, half decode) with fresh load readings, {@code cache_aware}, one prefill by prompt
 * affinity and one decode by load per request, each released again. The calling thread's CPU time over all the
 * decisions, divided by their number (a release is counted with its decision).
 */
public final class DecisionCpu {
  private DecisionCpu() {
  }

  /** Nanoseconds of thread CPU per decision over {@code requests} requests (two decisions each), after a warm-up. */
  public static double nanosPerDecision(int engines, int requests) {
    List<EngineConfig> fleet = new ArrayList<>();
    for (int i = 0; i < engines; i++) {
      Role role = i % 2 == 0 ? Role.PREFILL : Role.DECODE;
      fleet.add(new EngineConfig((role == Role.PREFILL ? "P" : "D") + i, "http://10.0.0." + (i % 250) + ":" + (8000 + i), role,
          null, null));
    }
    long[] now = {1_000_000L};
    PlacementTable table = new PlacementTable(fleet, () -> now[0]);
    table.configure(PlacementConfig.defaults(), 3);
    for (int i = 0; i < engines; i++) {
      table.applyLoad(new EngineLoad(fleet.get(i).iid(), i % 7, i % 3, 0.1 * (i % 5), now[0], "bench", null));
    }
    String[] affinities = new String[1024];
    for (int i = 0; i < affinities.length; i++) affinities[i] = "prefix:" + Long.toHexString(narwhal.common.bus.Rendezvous.hash("group " + i));
    run(table, affinities, Math.max(2_000, requests / 4));
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long before = threads.getCurrentThreadCpuTime();
    run(table, affinities, requests);
    return (threads.getCurrentThreadCpuTime() - before) / (2.0 * requests);
  }

  private static void run(PlacementTable table, String[] affinities, int requests) {
    for (int i = 0; i < requests; i++) {
      var prefill = table.reserve(Phase.PREFILL, Set.of(), null, affinities[i & (affinities.length - 1)]).orElseThrow();
      var decode = table.reserve(Phase.DECODE, Set.of(), prefill.iid()).orElseThrow();
      table.release(prefill.id());
      table.release(decode.id());
    }
  }
}
