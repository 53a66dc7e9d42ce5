package narwhal.launcher;

import narwhal.common.config.NarwhalConfig;
import narwhal.router.PreflightReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code narwhal preflight}: checks the fleet as a router would at start, prints the table, exits 1 on failure. */
@Command(name = "preflight", mixinStandardHelpOptions = true, description = "Check every engine and every producer→consumer pair.")
final class PreflightCommand implements Callable<Integer> {
  @Option(names = "--fleet", defaultValue = "conf/narwhal.json", description = "fleet file (default: ${DEFAULT-VALUE})")
  Path fleet;

  @Override
  public Integer call() {
    NarwhalConfig config = FleetFile.load(fleet);
    PreflightReport report = Blocking.await(NarwhalNode.preflight(config, line -> System.out.println("  " + line)));
    System.out.println(report.table());
    return report.passed() ? 0 : 1;
  }
}
