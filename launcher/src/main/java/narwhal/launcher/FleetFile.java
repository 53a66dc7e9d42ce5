package narwhal.launcher;

import narwhal.common.config.ConfigException;
import narwhal.common.config.ConfigOverrides;
import narwhal.common.config.NarwhalConfig;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The fleet file of a command ({@code --fleet}) with its start-time overrides: the {@code NARWHAL_<SECTION>_<KEY>}
 * environment variables and the repeatable {@code --set section.key=value} (docs/configuration.md). Reads and validates it for
 * the command line, turning refusals into one readable line. A picocli mixin of every command that reads a fleet file.
 */
final class FleetFile {
  @Option(names = "--fleet", defaultValue = "conf/narwhal.json", description = "fleet file (default: ${DEFAULT-VALUE})")
  Path fleet;

  @Option(names = "--set", paramLabel = "SECTION.KEY=VALUE",
      description = "override one fleet-file key (repeatable; over the file and NARWHAL_<SECTION>_<KEY> variables), "
          + "e.g. --set server.port=8001 --set cluster.members=10.0.0.1,10.0.0.2")
  List<String> sets = new ArrayList<>();

  /** The environment the overrides come from; tests replace it. */
  Map<String, String> environment = System.getenv();

  private ConfigOverrides overrides;

  ConfigOverrides overrides() {
    if (overrides == null) {
      try {
        overrides = ConfigOverrides.of(environment, sets);
      } catch (ConfigException e) {
        throw new CommandFailure(e.getMessage());
      }
    }
    return overrides;
  }

  /** The fleet file's {@code cluster} and {@code admin} sections with the overrides applied, validated alone. */
  NarwhalConfig.AdminView loadAdminView() {
    try {
      return overrides().parseAdminView(Files.readString(fleet));
    } catch (IOException e) {
      throw new CommandFailure("cannot read fleet file " + fleet + ": " + e.getMessage());
    } catch (ConfigException e) {
      throw new CommandFailure("fleet file " + fleet + " refused: " + e.getMessage());
    }
  }

  /** The fleet file with the overrides applied, validated; warns (stderr) of NARWHAL_* variables that set nothing. */
  NarwhalConfig load() {
    NarwhalConfig config;
    try {
      config = overrides().parse(Files.readString(fleet));
    } catch (IOException e) {
      throw new CommandFailure("cannot read fleet file " + fleet + ": " + e.getMessage());
    } catch (ConfigException e) {
      throw new CommandFailure("fleet file " + fleet + " refused: " + e.getMessage());
    }
    List<String> links = ConfigOverrides.serviceLinks(environment);
    if (!links.isEmpty()) {
      System.err.println("narwhal: " + links.size() + " environment variable(s) look like Kubernetes service links ("
          + String.join(", ", links.subList(0, Math.min(4, links.size()))) + (links.size() > 4 ? ", …" : "")
          + "): ignored, not read as overrides; set enableServiceLinks: false on the pod to drop them");
    }
    for (String name : ConfigOverrides.unmatched(environment, config)) {
      System.err.println("narwhal: environment variable " + name + " names no fleet-file key; ignored");
    }
    return config;
  }
}
