package narwhal.bench.process;

import io.vertx.core.json.JsonObject;
import narwhal.bench.BenchEnv;
import narwhal.bench.probe.JvmProbe;
import narwhal.bench.probe.ProcessCpu;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One router replica as its own process, exactly as an operator runs it: {@code java -jar narwhal.jar serve
 * --fleet FILE}, with the fleet file generated for the scenario. Its output goes to a log file; it is ready
 * when it prints the port it serves on. Optional JMX (heap readings) and JFR (profile of the router alone).
 * Stopping sends SIGTERM and, if the process is still there after {@link #STOP_WAIT_S} s, SIGKILL — and says so.
 */
public final class RouterProcess implements AutoCloseable {
  /** How long a router gets to exit after SIGTERM before SIGKILL. */
  public static final long STOP_WAIT_S = 2;
  /** How long a router may take to say it serves (a clustered one joining a loaded cluster has taken 30 s here, over 120 s on a machine at load 40–55). */
  public static final long READY_WAIT_S = 300;
  private static final Pattern SERVING = Pattern.compile("narwhal serving .* on port (\\d+)");

  private final Process process;
  private final Path log;
  private final Path fleetFile;
  private final int port;
  private final int jmxPort;
  private final boolean jfr;
  private final Deque<String> tail;
  private JvmProbe probe;
  private String stopNote;
  private long startedNanos;
  private long readyMs;
  private long terminatedAt;

  private RouterProcess(Process process, Path log, Path fleetFile, int port, int jmxPort, boolean jfr, Deque<String> tail) {
    this.process = process;
    this.log = log;
    this.fleetFile = fleetFile;
    this.port = port;
    this.jmxPort = jmxPort;
    this.jfr = jfr;
    this.tail = tail;
  }

  /**
   * What to start: extra JVM flags (heap size), JMX for heap readings, JFR for a profile, extra {@code serve} options,
   * a command prefix the {@code java} command runs under (e.g. {@code ip netns exec NS}, which execs it: the pid stays
   * the JVM's) and environment variables added to the bench's own.
   */
  public record Options(List<String> jvmArgs, boolean jmx, boolean jfr, List<String> serveArgs, List<String> commandPrefix,
                        Map<String, String> environment) {
    public Options(List<String> jvmArgs, boolean jmx, boolean jfr) {
      this(jvmArgs, jmx, jfr, List.of());
    }

    public Options(List<String> jvmArgs, boolean jmx, boolean jfr, List<String> serveArgs) {
      this(jvmArgs, jmx, jfr, serveArgs, List.of(), Map.of());
    }

    public static Options plain() {
      return new Options(List.of(), false, false);
    }

    /** Plain, with these options after {@code serve --fleet FILE}. */
    public static Options serving(String... serveArgs) {
      return new Options(List.of(), false, false, List.of(serveArgs));
    }

    /** These options, the JVM started under {@code prefix} with {@code environment} added. */
    public Options under(List<String> prefix, Map<String, String> environment) {
      return new Options(jvmArgs, jmx, jfr, serveArgs, List.copyOf(prefix), Map.copyOf(environment));
    }
  }

  public static RouterProcess start(BenchEnv env, String name, JsonObject fleet, Options options) {
    Path dir = env.tmp();
    Path fleetFile = dir.resolve(name + "-fleet.json");
    Path log = dir.resolve(name + "-router.log");
    if (env.options().routerLoops() > 0) SimBench.set(fleet, "server", "event_loops", env.options().routerLoops());
    if (env.options().tracing()) {
      SimBench.set(fleet, "telemetry", "otlp_endpoint", env.otlpSink().url());
      SimBench.set(fleet, "telemetry", "sample_ratio", 1.0);
    }
    try {
      Files.writeString(fleetFile, fleet.encodePrettily());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<String> command = new ArrayList<>(options.commandPrefix());
    command.add(env.java().toString());
    command.addAll(options.jvmArgs());
    int jmxPort = -1;
    if (options.jmx()) {
      jmxPort = FreePort.pick();
      command.addAll(List.of("-Dcom.sun.management.jmxremote.port=" + jmxPort, "-Dcom.sun.management.jmxremote.rmi.port=" + jmxPort,
          "-Dcom.sun.management.jmxremote.host=127.0.0.1", "-Djava.rmi.server.hostname=127.0.0.1",
          "-Dcom.sun.management.jmxremote.authenticate=false", "-Dcom.sun.management.jmxremote.ssl=false"));
    }
    if (options.jfr()) {
      command.addAll(List.of("-XX:StartFlightRecording=name=bench,settings=profile", "-XX:FlightRecorderOptions=stackdepth=128"));
    }
    command.addAll(List.of("-jar", env.routerJar().toString(), "serve", "--fleet", fleetFile.toString()));
    command.addAll(options.serveArgs());
    long t0 = System.nanoTime();
    Process process;
    try {
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
      builder.environment().putAll(options.environment());
      process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the router: " + e.getMessage(), e);
    }
    Deque<String> tail = new ArrayDeque<>();
    CompletableFuture<Integer> ready = new CompletableFuture<>();
    Thread reader = new Thread(() -> copyOutput(process, log, tail, ready), "router-log-" + name);
    reader.setDaemon(true);
    reader.start();
    try {
      int port = ready.get(READY_WAIT_S, TimeUnit.SECONDS);
      RouterProcess router = new RouterProcess(process, log, fleetFile, port, jmxPort, options.jfr(), tail);
      router.startedNanos = t0;
      router.readyMs = (System.nanoTime() - t0) / 1_000_000;
      if (options.jmx()) router.probe = JvmProbe.connect(jmxPort, 15_000);
      return router;
    } catch (Exception e) {
      process.destroyForcibly();
      String why = e instanceof java.util.concurrent.ExecutionException ? e.getCause().getMessage() : e.toString();
      throw new IllegalStateException("router did not start: " + why + " (log: " + log + ")");
    }
  }

  private static void copyOutput(Process process, Path log, Deque<String> tail, CompletableFuture<Integer> ready) {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
         Writer out = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
      String line;
      while ((line = in.readLine()) != null) {
        out.write(line);
        out.write('\n');
        out.flush();
        synchronized (tail) {
          tail.addLast(line);
          if (tail.size() > 40) tail.removeFirst();
        }
        Matcher m = SERVING.matcher(line);
        if (m.find()) ready.complete(Integer.parseInt(m.group(1)));
      }
    } catch (IOException ignored) {
      // the process went away
    }
    String last;
    synchronized (tail) {
      last = String.join(" | ", tail);
    }
    ready.completeExceptionally(new IllegalStateException("router exited (" + exitCode(process) + "): " + last));
  }

  private static String exitCode(Process process) {
    try {
      return "exit " + process.waitFor();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  public int port() {
    return port;
  }

  /** {@link System#nanoTime()} just before the process was started: what start-to-ready times count from. */
  public long startedNanos() {
    return startedNanos;
  }

  /** Milliseconds from the process start to the line saying it serves. */
  public long readyMs() {
    return readyMs;
  }

  public long pid() {
    return process.pid();
  }

  public boolean alive() {
    return process.isAlive();
  }

  public Path log() {
    return log;
  }

  public Path fleetFile() {
    return fleetFile;
  }

  /** Heap readings; null when started without JMX. */
  public JvmProbe probe() {
    return probe;
  }

  /** CPU seconds the router has used so far. */
  public double cpuSeconds() {
    return ProcessCpu.seconds(process.pid());
  }

  /** The part of {@link #cpuSeconds()} its JIT compilers used. */
  public double compilerCpuSeconds() {
    return ProcessCpu.compilerSeconds(process.pid());
  }

  /** The last lines the router printed. */
  public List<String> tail() {
    synchronized (tail) {
      return List.copyOf(tail);
    }
  }

  /** Writes the flight recording started at launch to {@code file} (needs {@code jcmd}); false when it cannot. */
  public boolean dumpProfile(BenchEnv env, Path file) {
    if (!jfr) return false;
    Path jcmd = env.java().resolveSibling("jcmd");
    try {
      Process p = new ProcessBuilder(jcmd.toString(), String.valueOf(process.pid()), "JFR.dump", "name=bench",
          "filename=" + file.toAbsolutePath()).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      boolean ok = p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0 && Files.exists(file);
      if (!ok) System.out.println("JFR dump failed: " + out.strip());
      return ok;
    } catch (IOException e) {
      System.out.println("JFR dump failed: " + e.getMessage());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** SIGKILL, no grace and no shutdown hook: the replica is gone, mid-request, when this returns. */
  public void kill() {
    if (probe != null) probe.close();
    probe = null;
    process.destroyForcibly();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) throw new IllegalStateException("router " + process.pid() + " survived SIGKILL");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** How the last stop went: null while running or after a clean SIGTERM stop. */
  public String stopNote() {
    return stopNote;
  }

  @Override
  public void close() {
    close(STOP_WAIT_S);
  }

  /** SIGTERM, then SIGKILL if the router is still there after {@code waitS} seconds (a clustered one leaves its cluster first). */
  public void close(long waitS) {
    if (!process.isAlive()) {
      if (probe != null) probe.close();
      return;
    }
    terminate();
    awaitExit(waitS);
  }

  /** Sends SIGTERM and returns at once: the router drains and stops on its own ({@link #awaitExit}). */
  public void terminate() {
    if (probe != null) probe.close();
    probe = null;
    terminatedAt = System.nanoTime();
    process.destroy();
  }

  /**
   * After {@link #terminate}: waits up to {@code waitS} seconds for the process to exit, then SIGKILLs it and says so
   * ({@link #stopNote}). Returns the milliseconds from SIGTERM to the exit.
   */
  public long awaitExit(long waitS) {
    long t0 = terminatedAt;
    try {
      if (!process.waitFor(waitS, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
        stopNote = "router did not exit within " + waitS + " s of SIGTERM; killed with SIGKILL";
      } else if (process.exitValue() != 0 && process.exitValue() != 143) {
        stopNote = "router exited with " + process.exitValue() + " after SIGTERM ("
            + Math.round((System.nanoTime() - t0) / 1e6) + " ms)";
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
    if (stopNote != null) System.out.println("note: " + stopNote);
    return (System.nanoTime() - t0) / 1_000_000;
  }
}
