package narwhal.launcher;

import picocli.CommandLine;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** {@code narwhal --version}: the project version Maven wrote into {@code narwhal/build.properties} at build time. */
public final class BuildVersion implements CommandLine.IVersionProvider {
  static final String RESOURCE = "/narwhal/build.properties";

  /** The build's project version, e.g. {@code 0.1.0-SNAPSHOT}. */
  public static String version() {
    try (InputStream in = BuildVersion.class.getResourceAsStream(RESOURCE)) {
      if (in == null) throw new IllegalStateException(RESOURCE + " is missing from the build");
      Properties properties = new Properties();
      properties.load(in);
      return properties.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public String[] getVersion() {
    return new String[] {"narwhal " + version()};
  }
}
