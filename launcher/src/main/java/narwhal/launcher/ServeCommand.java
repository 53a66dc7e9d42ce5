package narwhal.launcher;

import narwhal.common.config.NarwhalConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.util.concurrent.Callable;

/** {@code narwhal serve}: one router replica in front of the fleet the fleet file names. */
@Command(name = "serve", mixinStandardHelpOptions = true, description = "Run a router replica for the fleet in --fleet.")
final class ServeCommand implements Callable<Integer> {
  @Mixin
  ServeOptions options = new ServeOptions();

  @Override
  public Integer call() {
    NarwhalConfig config = options.config();
    if (config.logging().format() == narwhal.common.config.LoggingConfig.Format.JSON) JsonLogFormatter.install();
    NarwhalNode node = options.start(config);
    System.out.println("narwhal serving " + String.join(", ", config.models()) + " on port " + node.port() + "; " + node.describe());
    return ServeOptions.serveUntilStopped(node, true);
  }
}
