package narwhal.bench.load;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Many keep-alive client connections to one port, each sending one request and then left idle, and what the server
 * did to each: answered it (a status line arrived), later closed it (timed from its answer: an idle timeout), or
 * refused it (closed before any answer, or the connect failed; timed from the connect: a connection cap). Opened a
 * few at a time on one context of the load generator, where every socket callback runs; counts are read from any
 * thread.
 */
public final class ConnectionCrowd {
  private static final Buffer HEALTH = Buffer.buffer("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "ISO-8859-1");

  private final Vertx vertx;
  private final NetClient net;
  private final int port;
  private final Context context;
  private final List<NetSocket> sockets = new ArrayList<>();
  private final AtomicInteger answered = new AtomicInteger();
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicInteger peakOpen = new AtomicInteger();
  private final AtomicInteger closedAfterAnswer = new AtomicInteger();
  private final AtomicInteger refused = new AtomicInteger();
  private final List<Long> idleBeforeClose = new ArrayList<>();
  private final LatencyHistogram refusedAfter = new LatencyHistogram();
  private volatile long lastAnswerNanos;
  private volatile boolean closingOwn;

  public ConnectionCrowd(Vertx vertx, NetClient net, int port) {
    this.vertx = vertx;
    this.net = net;
    this.port = port;
    this.context = vertx.getOrCreateContext();
  }

  /**
   * Opens {@code n} connections, at most {@code parallel} connecting at once, each sending {@code GET /health}; done
   * when each was answered or refused (or {@code waitMs} passed for it).
   */
  public Future<Void> open(int n, int parallel, long waitMs) {
    Promise<Void> done = Promise.promise();
    AtomicInteger started = new AtomicInteger();
    AtomicInteger ended = new AtomicInteger();
    context.runOnContext(v -> {
      for (int i = 0; i < Math.min(parallel, n); i++) next(n, waitMs, started, ended, done);
    });
    return done.future();
  }

  private void next(int n, long waitMs, AtomicInteger started, AtomicInteger ended, Promise<Void> done) {
    if (started.getAndIncrement() >= n) return;
    one(waitMs).onComplete(ar -> {
      if (ended.incrementAndGet() == n) done.tryComplete();
      else next(n, waitMs, started, ended, done);
    });
  }

  /** One connection: completes when it was answered, refused, or neither within {@code waitMs}. */
  private Future<Void> one(long waitMs) {
    Promise<Void> settled = Promise.promise();
    long t0 = System.nanoTime();
    net.connect(port, "127.0.0.1").onComplete(ar -> {
      if (ar.failed()) {
        refusedAt(t0);
        settled.tryComplete();
        return;
      }
      NetSocket socket = ar.result();
      sockets.add(socket);
      peakOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
      long[] answeredAt = {0};
      long timer = vertx.setTimer(waitMs, id -> settled.tryComplete());
      socket.handler(buf -> {
        if (answeredAt[0] == 0 && buf.toString(StandardCharsets.ISO_8859_1).startsWith("HTTP/1.")) {
          answeredAt[0] = System.nanoTime();
          lastAnswerNanos = answeredAt[0];
          answered.incrementAndGet();
          vertx.cancelTimer(timer);
          settled.tryComplete();
        }
      });
      socket.closeHandler(v -> {
        open.decrementAndGet();
        vertx.cancelTimer(timer);
        if (!closingOwn) {
          if (answeredAt[0] == 0) {
            refusedAt(t0);
          } else {
            closedAfterAnswer.incrementAndGet();
            synchronized (idleBeforeClose) {
              idleBeforeClose.add(System.nanoTime() - answeredAt[0]);
            }
          }
        }
        settled.tryComplete();
      });
      socket.exceptionHandler(err -> { });
      socket.write(HEALTH.copy());
    });
    return settled.future();
  }

  private void refusedAt(long t0) {
    refused.incrementAndGet();
    synchronized (refusedAfter) {
      refusedAfter.record(System.nanoTime() - t0);
    }
  }

  /** Closes every connection still open from this side; those closes are not counted as the server's. */
  public Future<Void> closeAll() {
    Promise<Void> done = Promise.promise();
    context.runOnContext(v -> {
      closingOwn = true;
      List<Future<Void>> closes = new ArrayList<>();
      for (NetSocket s : sockets) closes.add(s.close());
      sockets.clear();
      Future.join(closes).<Void>mapEmpty().onComplete(ar -> done.complete());
    });
    return done.future();
  }

  /** Sends {@code request} on one connection still open and answered ({@code Connection: close}, so the server ends it), and returns all it answered. */
  public Future<String> askOnOpen(Buffer request) {
    Promise<String> answer = Promise.promise();
    context.runOnContext(v -> {
      NetSocket socket = sockets.isEmpty() ? null : sockets.remove(sockets.size() - 1);
      if (socket == null) {
        answer.fail("no connection open");
        return;
      }
      StringBuilder text = new StringBuilder();
      socket.handler(buf -> text.append(buf.toString(StandardCharsets.UTF_8)));
      socket.closeHandler(c -> {
        open.decrementAndGet();
        answer.tryComplete(text.toString());
      });
      socket.write(request);
    });
    return answer.future();
  }

  public int answered() {
    return answered.get();
  }

  /** Connections open now (connected, not closed by either side). */
  public int open() {
    return open.get();
  }

  public int peakOpen() {
    return peakOpen.get();
  }

  /** Answered connections the server closed afterwards. */
  public int closedAfterAnswer() {
    return closedAfterAnswer.get();
  }

  /** Connections closed by the server before any answer, or refused at connect. */
  public int refused() {
    return refused.get();
  }

  /** When the last answer arrived ({@link System#nanoTime()}), 0 before any. */
  public long lastAnswerNanos() {
    return lastAnswerNanos;
  }

  /** Time from each answer to the server's close of its connection. */
  public LatencyHistogram idleBeforeClose() {
    LatencyHistogram h = new LatencyHistogram();
    synchronized (idleBeforeClose) {
      idleBeforeClose.forEach(h::record);
    }
    return h;
  }

  /** Answered connections the server closed less than {@code nanos} after their answer. */
  public long closedWithin(long nanos) {
    synchronized (idleBeforeClose) {
      return idleBeforeClose.stream().filter(t -> t < nanos).count();
    }
  }

  /** Time from each refused connection's connect to its close (or failed connect). */
  public LatencyHistogram refusedAfter() {
    synchronized (refusedAfter) {
      LatencyHistogram copy = new LatencyHistogram();
      copy.merge(refusedAfter);
      return copy;
    }
  }
}
