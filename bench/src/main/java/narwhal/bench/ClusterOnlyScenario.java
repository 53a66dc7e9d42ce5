package narwhal.bench;

/** A scenario that needs several clustered replicas; registered so the command names it, not runnable yet. */
final class ClusterOnlyScenario implements Scenario {
  private final String name;
  private final String summary;

  ClusterOnlyScenario(String name, String summary) {
    this.name = name;
    this.summary = summary;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String summary() {
    return summary + " — " + Bench.NEEDS_CLUSTER;
  }

  @Override
  public void run(BenchEnv env) {
    throw new UnsupportedOperationException(Bench.NEEDS_CLUSTER);
  }
}
