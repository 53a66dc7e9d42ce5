package narwhal.bench;

/** One benchmark scenario: fills the environment's report (layout, tables, verdicts) and returns. */
public interface Scenario {
  String name();

  /** One line for the command's help. */
  String summary();

  void run(BenchEnv env) throws Exception;
}
