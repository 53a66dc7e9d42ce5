package narwhal.bench.load;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Speaks HTTP/1.1 byte by byte over a plain socket, for inputs an HTTP client will not send: malformed framing,
 * invalid bytes, huge or endless headers, bodies sent slowly or never. A {@link Script} is a list of writes,
 * each after a pause; the exchange ends when the expected number of answers arrived, the server closed the
 * connection, or the wait bound passed (the server held the connection without answering).
 */
public final class RawHttp {
  private static final Pattern STATUS = Pattern.compile("HTTP/1\\.[01] (\\d{3}) ");

  private RawHttp() {
  }

  /** One write after {@code pauseMs}. */
  public record Step(long pauseMs, Buffer bytes) {
  }

  /** What to send: steps in order; the exchange waits for {@code answers} status lines. */
  public record Script(List<Step> steps, int answers) {
    public static Script once(Buffer request) {
      return new Script(List.of(new Step(0, request)), 1);
    }
  }

  /** How it went: the statuses answered, whether the server closed, how long it took, and why it ended. */
  public record Answer(List<Integer> statuses, boolean closedByServer, long millis, String ending) {
    public boolean answered() {
      return !statuses.isEmpty();
    }

    /** At least {@code n} answers, every one a 4xx. */
    public boolean all4xx(int n) {
      return statuses.size() >= n && all4xx();
    }

    public boolean all4xx() {
      return answered() && statuses.stream().allMatch(s -> s >= 400 && s < 500);
    }

    public boolean any5xx() {
      return statuses.stream().anyMatch(s -> s >= 500);
    }

    public String describe() {
      String s = statuses.isEmpty() ? "no answer" : statuses.size() == 1 ? String.valueOf(statuses.get(0)) : summarize(statuses);
      return s + (closedByServer ? ", closed" : "") + " (" + ending + ")";
    }

    private static String summarize(List<Integer> statuses) {
      java.util.Map<Integer, Long> counts = new java.util.TreeMap<>();
      statuses.forEach(x -> counts.merge(x, 1L, Long::sum));
      return statuses.size() + " answers " + counts;
    }
  }

  /** Runs a script against {@code 127.0.0.1:port}; must be called on a Vert.x context. */
  public static Future<Answer> exchange(Vertx vertx, NetClient client, int port, Script script, long waitMs) {
    long t0 = System.nanoTime();
    Promise<Answer> result = Promise.promise();
    client.connect(port, "127.0.0.1").onComplete(ar -> {
      if (ar.failed()) {
        result.complete(new Answer(List.of(), true, 0, "connect failed: " + ar.cause().getMessage()));
        return;
      }
      NetSocket socket = ar.result();
      StringBuilder seen = new StringBuilder();
      List<Integer> statuses = new ArrayList<>();
      long timer = vertx.setTimer(waitMs, id -> {
        if (result.tryComplete(new Answer(List.copyOf(statuses), false, ms(t0), "held open " + waitMs + " ms"))) socket.close();
      });
      socket.handler(buf -> {
        // Only status lines matter: keep the text of the answers, bounded.
        seen.append(buf.toString(StandardCharsets.ISO_8859_1));
        statuses.clear();
        Matcher m = STATUS.matcher(seen);
        while (m.find()) statuses.add(Integer.parseInt(m.group(1)));
        if (seen.length() > 1 << 20) seen.delete(0, seen.length() - 4096);
        if (statuses.size() >= script.answers() && result.tryComplete(new Answer(List.copyOf(statuses), false, ms(t0), "answered"))) {
          vertx.cancelTimer(timer);
          socket.close();
        }
      });
      socket.closeHandler(v -> {
        vertx.cancelTimer(timer);
        result.tryComplete(new Answer(List.copyOf(statuses), true, ms(t0), "server closed"));
      });
      socket.exceptionHandler(err -> { });
      send(vertx, socket, script.steps(), 0, result.future());
    });
    return result.future();
  }

  private static void send(Vertx vertx, NetSocket socket, List<Step> steps, int i, Future<Answer> done) {
    if (i >= steps.size() || done.isComplete()) return;
    Step step = steps.get(i);
    Runnable write = () -> {
      if (done.isComplete()) return;
      socket.write(step.bytes()).onComplete(ar -> {
        if (ar.succeeded()) send(vertx, socket, steps, i + 1, done);
      });
    };
    if (step.pauseMs() > 0) vertx.setTimer(step.pauseMs(), id -> write.run());
    else write.run();
  }

  private static long ms(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  /** {@code POST path} with a content length and any extra header lines (each ending in CRLF). */
  public static Buffer post(String path, byte[] body, String extraHeaders) {
    String head = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + body.length
        + "\r\n" + extraHeaders + "\r\n";
    return Buffer.buffer(head.getBytes(StandardCharsets.ISO_8859_1)).appendBytes(body);
  }

  public static Buffer post(String path, String body) {
    return post(path, body.getBytes(StandardCharsets.UTF_8), "");
  }

  public static Buffer text(String s) {
    return Buffer.buffer(s.getBytes(StandardCharsets.ISO_8859_1));
  }
}
