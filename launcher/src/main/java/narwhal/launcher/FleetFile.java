package narwhal.launcher;

import narwhal.common.config.ConfigException;
import narwhal.common.config.NarwhalConfig;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads and validates a fleet file for the command line, turning refusals into one readable line. */
final class FleetFile {
  private FleetFile() {
  }

  static NarwhalConfig load(Path path) {
    try {
      return NarwhalConfig.parse(Files.readString(path));
    } catch (IOException e) {
      throw new CommandFailure("cannot read fleet file " + path + ": " + e.getMessage());
    } catch (ConfigException e) {
      throw new CommandFailure("fleet file " + path + " refused: " + e.getMessage());
    }
  }
}
