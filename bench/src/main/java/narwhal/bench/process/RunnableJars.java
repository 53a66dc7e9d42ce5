package narwhal.bench.process;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The two runnable jars of a build: {@code launcher/target/narwhal.jar}, the production jar routers run (serve), and
 * {@code tools/target/narwhal-tools.jar}, the one with the simulator and the benchmarks (simulated engine processes).
 * Found beside the tools jar this runs from, else under the working directory (the repository, as {@code ./narwhal}
 * runs it).
 */
public final class RunnableJars {
  /** System property naming another build's production jar to start routers from. */
  public static final String ROUTER_JAR = "narwhal.bench.router.jar";
  static final Path PRODUCTION = Path.of("launcher", "target", "narwhal.jar");
  static final Path TOOLS = Path.of("tools", "target", "narwhal-tools.jar");

  private RunnableJars() {
  }

  /**
   * The production jar: the one named by {@value #ROUTER_JAR} (to measure another build, e.g. main before a change),
   * else this build's.
   */
  public static Path production() {
    String other = System.getProperty(ROUTER_JAR);
    if (other != null && !other.isBlank()) return Path.of(other).toAbsolutePath();
    return built(PRODUCTION);
  }

  /** This build's tools jar: the jar this runs from when it is one, else the built one. */
  public static Path tools() {
    return self().orElseGet(() -> built(TOOLS));
  }

  /** {@code relative} in the build this runs from: beside the running tools jar's module, else in the working directory. */
  private static Path built(Path relative) {
    Path root = self().map(jar -> jar.getParent().getParent().getParent()).orElse(Path.of("").toAbsolutePath());
    Path jar = root.resolve(relative);
    if (!Files.exists(jar)) {
      throw new IllegalStateException("no " + relative + ": run through ./narwhal, which builds " + PRODUCTION + " and " + TOOLS);
    }
    return jar;
  }

  private static Optional<Path> self() {
    try {
      Path self = Path.of(RunnableJars.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toAbsolutePath();
      String name = self.getFileName().toString();
      if (name.startsWith("narwhal") && name.endsWith(".jar") && self.getNameCount() >= 3) return Optional.of(self);
    } catch (URISyntaxException | RuntimeException ignored) {
      // not run from a jar
    }
    return Optional.empty();
  }
}
