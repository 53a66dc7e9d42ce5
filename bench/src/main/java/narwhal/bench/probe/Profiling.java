package narwhal.bench.probe;

import narwhal.bench.BenchEnv;
import narwhal.bench.process.RouterProcess;

import java.nio.file.Path;

/** With {@code --profile}: dumps the router's flight recording and puts its execution-sample summary in the report. */
public final class Profiling {
  private Profiling() {
  }

  public static void summarize(BenchEnv env, RouterProcess router) {
    if (!env.options().profile()) return;
    Path file = env.out().resolve(env.report().scenario() + (env.smoke() ? "-smoke" : "") + "-router.jfr");
    if (!router.dumpProfile(env, file)) {
      env.report().note("no profile: the router's flight recording could not be dumped");
      return;
    }
    try {
      JfrSummary summary = JfrSummary.read(file);
      summary.tables(15).forEach(env.report()::table);
      env.report().raw("profile", summary.toJson(40));
      env.report().note("router profile: " + file + " (" + summary.samples() + " execution samples; "
          + "jfr print --events jdk.ExecutionSample " + file + " lists them)");
    } catch (Exception e) {
      env.report().note("profile summary failed: " + e);
    }
  }
}
