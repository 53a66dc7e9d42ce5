package narwhal.tools;

import narwhal.launcher.CommandFailure;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import java.util.regex.Pattern;

/**
 * A process {@code narwhal demo --replicas} runs (a replica, haproxy), in a session of its own ({@code setsid} when the
 * machine has it) so that Ctrl-C reaches the demo only and the demo stops its children in order. Its output is
 * appended to a log file; with a {@code ready} pattern, {@link #start} returns once a line matches it.
 */
final class ChildProcess {
  /** The line a replica prints when it serves. */
  static final Pattern SERVING = Pattern.compile("narwhal serving .* on port \\d+");
  static final long READY_WAIT_S = 120;

  private final String name;
  private final List<String> command;
  private final Path log;
  private final Pattern ready;
  private final Process process;

  private ChildProcess(String name, List<String> command, Path log, Pattern ready, Process process) {
    this.name = name;
    this.command = command;
    this.log = log;
    this.ready = ready;
    this.process = process;
  }

  static ChildProcess start(String name, List<String> command, Path log, Pattern ready) {
    List<String> full = new ArrayList<>();
    if (Files.isExecutable(Path.of("/usr/bin/setsid"))) full.add("/usr/bin/setsid");
    full.addAll(command);
    Process process;
    try {
      process = new ProcessBuilder(full).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new CommandFailure("cannot start " + name + ": " + e.getMessage());
    }
    CompletableFuture<Void> seen = new CompletableFuture<>();
    Thread copier = new Thread(() -> copy(process, log, ready, seen), name + "-log");
    copier.setDaemon(true);
    copier.start();
    if (ready != null) {
      try {
        seen.get(READY_WAIT_S, TimeUnit.SECONDS);
      } catch (Exception e) {
        process.destroyForcibly();
        throw new CommandFailure(name + " did not start (see " + log + ")");
      }
    }
    return new ChildProcess(name, command, log, ready, process);
  }

  private static void copy(Process process, Path log, Pattern ready, CompletableFuture<Void> seen) {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
         Writer out = Files.newBufferedWriter(log, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
      String line;
      while ((line = in.readLine()) != null) {
        out.write(line);
        out.write('\n');
        out.flush();
        if (ready != null && ready.matcher(line).find()) seen.complete(null);
      }
    } catch (IOException ignored) {
      // the process went away
    }
    seen.completeExceptionally(new IllegalStateException("exited"));
  }

  /** Waits until something listens on {@code port} on loopback, or fails naming the process's log. */
  static void awaitListening(ChildProcess child, int port) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      if (!child.process.isAlive()) throw new CommandFailure(child.name + " exited (see " + child.log + ")");
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
    throw new CommandFailure(child.name + " does not listen on port " + port + " (see " + child.log + ")");
  }

  /** The same command again, logging to the same file. */
  ChildProcess restart() {
    return start(name, command, log, ready);
  }

  /** Calls {@code then} with the exit code when the process exits (on a thread of the JDK's). */
  void onExit(IntConsumer then) {
    process.onExit().thenAccept(p -> then.accept(p.exitValue()));
  }

  String name() {
    return name;
  }

  long pid() {
    return process.pid();
  }

  void terminate() {
    process.destroy();
  }

  /** Waits up to {@code seconds} for the exit, then kills the process. */
  void awaitExit(long seconds) {
    try {
      if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
        System.out.println("narwhal demo: " + name + " did not exit within " + seconds + " s of SIGTERM; killed");
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
