package narwhal.launcher;

import io.vertx.core.json.JsonObject;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One router replica as its own JVM, started as an operator starts it ({@code narwhal serve --fleet FILE --cluster}) from
 * the test's classpath, so tests can freeze it (SIGSTOP), thaw it and kill it for real. Ready once it prints the port
 * it serves on; its output until then is the failure message when it does not.
 */
final class ReplicaProcess implements AutoCloseable {
  private static final Pattern SERVING = Pattern.compile("narwhal serving .* on port (\\d+)");
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private final Process process;
  private final String host;
  private final int port;
  private final List<String> output;

  private ReplicaProcess(Process process, String host, int port, List<String> output) {
    this.process = process;
    this.host = host;
    this.port = port;
    this.output = output;
  }

  /** Starts {@code serve} for {@code fleet} with {@code --set} overrides; waits (up to 3 minutes) until it serves. */
  static ReplicaProcess start(Path fleet, String token, String... sets) throws IOException {
    return start(fleet, java.util.Map.of("NARWHAL_ADMIN_TOKEN", token), sets);
  }

  /** As {@link #start(Path, String, String...)} with these environment variables (the admin token among them). */
  static ReplicaProcess start(Path fleet, java.util.Map<String, String> env, String... sets) throws IOException {
    return start(List.of(), "127.0.0.1", fleet, env, sets);
  }

  /**
   * As {@link #start(Path, java.util.Map, String...)}, the command run behind {@code prefix} (e.g. {@code ip netns exec
   * NS}, which execs it in place, so signals still reach the JVM), its HTTP server reached on {@code host}.
   */
  static ReplicaProcess start(List<String> prefix, String host, Path fleet, java.util.Map<String, String> env, String... sets)
      throws IOException {
    List<String> command = new ArrayList<>(prefix);
    command.addAll(List.of(javaCommand(), "-Xmx256m", "-cp", classpath(), NarwhalCommand.class.getName(), "serve", "--fleet",
        fleet.toString(), "--cluster"));
    for (String set : sets) command.addAll(List.of("--set", set));
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().putAll(env);
    Process process = builder.start();
    CompletableFuture<Integer> port = new CompletableFuture<>();
    List<String> output = new ArrayList<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          synchronized (output) {
            output.add(line);
          }
          Matcher m = SERVING.matcher(line);
          if (m.find()) port.complete(Integer.parseInt(m.group(1)));
        }
      } catch (IOException ignored) {
        // the process ended
      }
      port.completeExceptionally(new IllegalStateException("the replica ended before it served"));
    }, "replica-output");
    reader.setDaemon(true);
    reader.start();
    try {
      return new ReplicaProcess(process, host, port.get(3, TimeUnit.MINUTES), output);
    } catch (Exception e) {
      process.destroyForcibly();
      synchronized (output) {
        throw new IllegalStateException("replica did not start: " + e + "\n" + String.join("\n", output), e);
      }
    }
  }

  /** The test JVM's {@code java} binary, for child JVMs. */
  static String javaCommand() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** The test JVM's classpath as entries a child JVM takes (surefire may hand a manifest-only jar: its Class-Path). */
  static String classpath() throws IOException {
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  /** Every line the replica printed so far (its log included). */
  String output() {
    synchronized (output) {
      return String.join("\n", output);
    }
  }

  /** Runs {@code narwhal admin ARGS --fleet FLEET} as an operator does (in this JVM, as a lite member); its exit code. */
  static int admin(Path fleet, String... args) {
    return adminOutput(fleet, args).exit();
  }

  /** What {@code narwhal admin} printed and its exit code. */
  record AdminRun(int exit, String text) {
  }

  static AdminRun adminOutput(Path fleet, String... args) {
    AdminCli command = new AdminCli();
    command.env = ClusterHarness.ENV;
    java.io.StringWriter out = new java.io.StringWriter();
    String[] all = java.util.stream.Stream.concat(java.util.Arrays.stream(args), java.util.stream.Stream.of("--fleet", fleet.toString(),
        "--timeout", "60")).toArray(String[]::new);
    int exit = new picocli.CommandLine(command).setOut(new java.io.PrintWriter(out, true)).setErr(new java.io.PrintWriter(out, true))
        .execute(all);
    return new AdminRun(exit, out.toString());
  }

  long pid() {
    return process.pid();
  }

  void signal(String name) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid())).inheritIO().start();
    if (kill.waitFor() != 0) throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
  }

  /** {@code GET path}: the status and body, or null when the replica does not answer within 2 s. */
  HttpResponse<String> get(String path) {
    try {
      return HTTP.send(HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + path)).timeout(Duration.ofSeconds(2)).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** {@code POST path} with a JSON body: the status and body, or null when the replica does not answer within 10 s. */
  HttpResponse<String> post(String path, String json) {
    try {
      return HTTP.send(HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + path)).timeout(Duration.ofSeconds(10))
          .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** {@code POST path} with a JSON body: the status, or -1 when the replica does not answer within 30 s. */
  int post(String path, JsonObject body) {
    try {
      return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(30))
          .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
          HttpResponse.BodyHandlers.ofString()).statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  /** {@code POST path} with a JSON body and a client key: the status, or -1 when the replica does not answer within 30 s. */
  int post(String path, JsonObject body, String bearer) {
    try {
      return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(30))
          .header("content-type", "application/json").header("authorization", "Bearer " + bearer)
          .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  /** {@code GET /metrics}, or "" when the replica does not answer within 2 s. */
  String metrics() {
    HttpResponse<String> resp = get("/metrics");
    return resp != null && resp.statusCode() == 200 ? resp.body() : "";
  }

  /** {@code GET /narwhal/state}, or null when the replica does not answer within 2 s. */
  JsonObject state() {
    HttpResponse<String> resp = get("/narwhal/state");
    return resp != null && resp.statusCode() == 200 ? new JsonObject(resp.body()) : null;
  }

  /**
   * Polls {@code /narwhal/state} until {@code done} holds of it, for at most {@code timeoutS}: a process is watched
   * from outside, with no event to await. The state it held; fails naming {@code what} and the last state read.
   */
  JsonObject awaitState(java.util.function.Predicate<JsonObject> done, long timeoutS, java.util.function.Supplier<String> what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
    JsonObject last = null;
    while (System.nanoTime() < deadline) {
      JsonObject state = state();
      if (state != null) {
        last = state;
        if (done.test(state)) return state;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("never within " + timeoutS + " s: " + what.get() + "; last state " + last);
  }

  /** The engine's state in this replica's {@code /narwhal/state}, or null when it does not answer. */
  String engineState(String iid) {
    JsonObject state = state();
    if (state == null) return null;
    return state.getJsonArray("engines").stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid")))
        .findFirst().map(e -> e.getString("state")).orElse(null);
  }

  static Path writeFleet(JsonObject fleet) throws IOException {
    Path file = Files.createTempFile("narwhal-process-fleet", ".json");
    Files.writeString(file, fleet.encodePrettily());
    return file;
  }

  @Override
  public void close() {
    try {
      signal("CONT");
    } catch (Exception ignored) {
      // not frozen, or already gone
    }
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
