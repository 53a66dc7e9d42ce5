package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pod deploy/kubernetes runs, on one machine: a replica started as a non-root user (uid 10001) in a working
 * directory it cannot write, with one writable directory (its {@code java.io.tmpdir}, where Vert.x's file cache and
 * Netty's native library go, and its journal), serves requests and writes nowhere else. Needs root to switch users
 * ({@code setpriv}), as CI runs.
 */
@Timeout(180)
class ReadOnlyReplicaTest {
  private static final Pattern SERVING = Pattern.compile("narwhal serving .* on port (\\d+)");
  private final Vertx engines = Vertx.vertx();
  private Process replica;

  @AfterEach
  void stop() {
    if (replica != null) replica.destroyForcibly();
    ClusterHarness.await(engines.close());
  }

  @Test
  void aNonRootReplicaWithAReadOnlyWorkingDirectoryServesAndWritesOnlyItsTempDirectory() throws Exception {
    assertEquals("root", System.getProperty("user.name"), "switching to uid 10001 needs root, as CI runs");
    List<String> urls = new ArrayList<>();
    JsonArray fleetEngines = new JsonArray();
    for (String[] e : List.of(new String[] {"P0", "prefill"}, new String[] {"D0", "decode"})) {
      SimEngine sim = ClusterHarness.await(SimEngine.start(engines, new SimEngineOptions().setName(e[0]).setRole(e[1]).setPort(0)
          .setSideChannelPort(0)));
      fleetEngines.add(new JsonObject().put("iid", e[0]).put("url", sim.url()).put("role", e[1]));
      urls.add(sim.url());
    }
    Path base = Files.createTempDirectory("narwhal-readonly");
    Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path tmp = Files.createDirectory(base.resolve("tmp"));
    Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwx------"));
    new ProcessBuilder("chown", "10001:10001", tmp.toString()).inheritIO().start().waitFor();
    Path work = Files.createDirectory(base.resolve("work"));
    Path fleet = work.resolve("narwhal.json");
    Files.writeString(fleet, new JsonObject().put("model", ClusterHarness.MODEL).put("engines", fleetEngines)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0))
        .put("journal", new JsonObject().put("path", tmp.resolve("journal.jsonl").toString())).encodePrettily());
    Files.setPosixFilePermissions(fleet, PosixFilePermissions.fromString("r--r--r--"));
    Files.setPosixFilePermissions(work, PosixFilePermissions.fromString("r-xr-xr-x"));

    List<String> command = new ArrayList<>(List.of("setpriv", "--reuid=10001", "--regid=10001", "--clear-groups",
        ReplicaProcess.javaCommand(), "-Xmx256m", "-Djava.io.tmpdir=" + tmp, "-cp", readableClasspath(base.resolve("lib")),
        NarwhalCommand.class.getName(), "serve", "--fleet", fleet.toString()));
    ProcessBuilder builder = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true);
    builder.environment().put("HOME", work.toString());
    replica = builder.start();
    CompletableFuture<Integer> port = new CompletableFuture<>();
    StringBuilder output = new StringBuilder();
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(replica.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          synchronized (output) {
            output.append(line).append('\n');
          }
          Matcher m = SERVING.matcher(line);
          if (m.find()) port.complete(Integer.parseInt(m.group(1)));
        }
      } catch (Exception ignored) {
        // the process ended
      }
      port.completeExceptionally(new IllegalStateException("the replica ended before it served"));
    });
    reader.setDaemon(true);
    reader.start();
    int servedOn;
    try {
      servedOn = port.get(2, TimeUnit.MINUTES);
    } catch (Exception e) {
      synchronized (output) {
        throw new AssertionError("the replica did not start: " + e + "\n" + output, e);
      }
    }
    HttpResponse<String> answer = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + servedOn
            + "/v1/completions")).header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
            new JsonObject().put("model", ClusterHarness.MODEL).put("prompt", "read only").put("max_tokens", 4).encode())).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, answer.statusCode(), answer.body());
    Path journal = tmp.resolve("journal.jsonl");
    for (int i = 0; i < 200 && (!Files.exists(journal) || Files.size(journal) == 0); i++) {
      ClusterHarness.await(io.vertx.core.Future.<Void>future(p -> engines.setTimer(25, t -> p.complete())));
    }
    assertTrue(Files.size(journal) > 0, "the journal is written in the writable directory");
    try (var listed = Files.list(work)) {
      assertEquals(List.of(fleet), listed.toList(), "nothing written in the working directory");
    }
    assertTrue(output.toString().lines().noneMatch(l -> l.contains("AccessDeniedException") || l.contains("Read-only")), output.toString());
  }

  /** The test's classpath with every jar another user cannot read (the root-owned Maven repository) copied into {@code lib}. */
  private static String readableClasspath(Path lib) throws Exception {
    Files.createDirectories(lib);
    List<String> entries = new ArrayList<>();
    int n = 0;
    for (String entry : ReplicaProcess.classpath().split(File.pathSeparator)) {
      Path path = Path.of(entry);
      if (Files.isRegularFile(path)) {
        Path copy = lib.resolve((n++) + "-" + path.getFileName());
        Files.copy(path, copy);
        Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("r--r--r--"));
        entries.add(copy.toString());
      } else {
        entries.add(entry);
      }
    }
    return String.join(File.pathSeparator, entries);
  }
}
