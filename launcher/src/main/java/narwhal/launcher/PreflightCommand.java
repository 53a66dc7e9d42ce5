package narwhal.launcher;

import narwhal.common.config.NarwhalConfig;
import narwhal.router.PreflightReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.util.concurrent.Callable;

/** {@code narwhal preflight}: checks the fleet as a router would at start, prints the table, exits 1 on failure. */
@Command(name = "preflight", mixinStandardHelpOptions = true, description = "Check every engine and every producer→consumer pair.")
final class PreflightCommand implements Callable<Integer> {
  @Mixin
  FleetFile fleetFile = new FleetFile();

  @Override
  public Integer call() {
    NarwhalConfig config = fleetFile.load();
    System.out.println("checking " + config.engines().size() + " engine(s) and every producer→consumer pair…");
    PreflightReport report = Blocking.await(NarwhalNode.preflight(config, line -> { }));
    System.out.println(report.table());
    return report.passed() ? 0 : 1;
  }
}
