package narwhal.bench;

import narwhal.bench.process.OtlpSink;
import narwhal.bench.process.RunnableJars;
import narwhal.bench.report.BenchReport;
import narwhal.bench.report.Progress;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Everything a scenario runs with: its options and report, the runnable jars and the java binary (to start
 * router and engine processes), the results directory and a scratch directory for generated files and logs, progress
 * output, and the resources it started, closed in reverse order at the end whatever happens.
 */
public final class BenchEnv implements AutoCloseable {
  private final BenchOptions options;
  private final BenchReport report;
  private final Progress progress;
  private final Path out;
  private final Path tmp;
  private final Deque<AutoCloseable> owned = new ArrayDeque<>();
  private OtlpSink otlpSink;

  BenchEnv(String scenario, BenchOptions options) {
    this.options = options;
    this.report = new BenchReport(scenario, options.smoke());
    this.progress = new Progress(scenario);
    this.out = options.out();
    this.tmp = out.resolve("tmp").resolve(scenario);
    try {
      Files.createDirectories(tmp);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public BenchOptions options() {
    return options;
  }

  public boolean smoke() {
    return options.smoke();
  }

  public BenchReport report() {
    return report;
  }

  public Progress progress() {
    return progress;
  }

  public Path out() {
    return out;
  }

  /** Scratch space: fleet files, journals, router and nginx logs, recordings. */
  public Path tmp() {
    return tmp;
  }

  /** System property naming another build's production jar to start routers from ({@link RunnableJars#production}). */
  public static final String ROUTER_JAR = RunnableJars.ROUTER_JAR;

  public Path java() {
    return Path.of(System.getProperty("java.home"), "bin", "java");
  }

  /** The production jar routers run from ({@link RunnableJars#production}). */
  public Path routerJar() {
    return RunnableJars.production();
  }

  /** The tools jar simulated engine processes run from ({@link RunnableJars#tools}). */
  public Path toolsJar() {
    return RunnableJars.tools();
  }

  /** The trace sink routers export to under {@code --tracing}, started on first use and closed with the scenario. */
  public synchronized OtlpSink otlpSink() {
    if (otlpSink == null) otlpSink = own(OtlpSink.start());
    return otlpSink;
  }

  /** Registers a resource to close when the scenario ends; returns it. */
  public <T extends AutoCloseable> T own(T resource) {
    owned.push(resource);
    return resource;
  }

  @Override
  public void close() {
    while (!owned.isEmpty()) {
      try {
        owned.pop().close();
      } catch (Throwable e) {
        System.out.println("note: cleanup: " + e);
      }
    }
  }
}
