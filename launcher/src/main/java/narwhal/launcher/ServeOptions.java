package narwhal.launcher;

import picocli.CommandLine.Option;

import java.nio.file.Path;

/** Options shared by the commands that start a router. */
final class ServeOptions {
  @Option(names = "--fleet", defaultValue = "conf/narwhal.json", description = "fleet file (default: ${DEFAULT-VALUE})")
  Path fleet;

  @Option(names = "--preflight", defaultValue = "strict",
      description = "strict: refuse to serve when preflight fails; warn: serve anyway; skip (default: ${DEFAULT-VALUE})")
  String preflight;

  NarwhalNode.PreflightMode mode() {
    return switch (preflight) {
      case "strict" -> NarwhalNode.PreflightMode.STRICT;
      case "warn" -> NarwhalNode.PreflightMode.WARN;
      case "skip" -> NarwhalNode.PreflightMode.SKIP;
      default -> throw new CommandFailure("--preflight: \"" + preflight + "\" is not valid: expected strict, warn or skip");
    };
  }
}
