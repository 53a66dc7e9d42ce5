package narwhal.bench.load;

import io.vertx.core.Context;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

/**
 * Streaming and non-streaming clients of one address (a load balancer), each sending its next request when the last
 * one ends. Every request is counted under the phase current when it ended, by mode ({@code stream} /
 * {@code json}): its latency (whole request; first token too for streams) and, when it failed, what kind of failure
 * it was as a client tells it ({@link #kind}).
 */
public final class PhasedLoad {
  /** A streaming or a non-streaming request, and what it sends. */
  public record Mode(String name, boolean stream, Buffer body) {
  }

  /** What one phase of one mode saw. */
  public static final class Tally {
    public final RunStats stats;
    public final Map<String, Integer> kinds = new ConcurrentHashMap<>();

    public Tally(String label) {
      stats = new RunStats(label);
    }

    public synchronized void add(Exchange e) {
      stats.add(e);
      kinds.merge(kind(e), 1, Integer::sum);
    }

    public long failed() {
      return kinds.entrySet().stream().filter(k -> !k.getKey().equals("ok")).mapToLong(Map.Entry::getValue).sum();
    }

    /** Streams that got their 200 and then did not end with {@code [DONE]}. */
    public long broken() {
      return kinds.entrySet().stream().filter(k -> k.getKey().startsWith("broken stream")).mapToLong(Map.Entry::getValue).sum();
    }
  }

  private final HttpWork client;
  private final List<Mode> modes;
  private final Map<String, Map<String, Tally>> phases = new ConcurrentHashMap<>();
  private final List<String> order = new ArrayList<>();
  private final int clientsPerMode;
  private final long timeoutMs;
  private final AtomicInteger open = new AtomicInteger();
  private CountDownLatch stopped;
  private volatile String phase;
  private volatile boolean stop;
  private volatile BiConsumer<String, Exchange> each = (mode, e) -> { };

  public PhasedLoad(HttpWork client, List<Mode> modes, int clientsPerMode, long timeoutMs, String firstPhase) {
    this.client = client;
    this.modes = List.copyOf(modes);
    this.clientsPerMode = clientsPerMode;
    this.timeoutMs = timeoutMs;
    phase(firstPhase);
  }

  public void start() {
    stopped = new CountDownLatch(modes.size() * clientsPerMode);
    for (Mode mode : modes) {
      for (int c = 0; c < clientsPerMode; c++) {
        client.vertxRun(() -> next(mode));
      }
    }
  }

  /** Also hands every request, as it ends, to {@code listener} (its mode's name and the exchange); set before {@link #start}. */
  public PhasedLoad onEach(BiConsumer<String, Exchange> listener) {
    each = listener;
    return this;
  }

  /** Requests started and not yet ended. */
  public int open() {
    return open.get();
  }

  /** Counts requests that end from now on under {@code name}. */
  public synchronized void phase(String name) {
    if (!order.contains(name)) order.add(name);
    phase = name;
  }

  private void next(Mode mode) {
    if (stop) {
      stopped.countDown();
      return;
    }
    Context ctx = io.vertx.core.Vertx.currentContext();
    open.incrementAndGet();
    client.post("/v1/completions", mode.body(), mode.stream(), timeoutMs).onComplete(ar -> {
      open.decrementAndGet();
      tally(phase, mode.name()).add(ar.result());
      each.accept(mode.name(), ar.result());
      ctx.runOnContext(v -> next(mode));
    });
  }

  private Tally tally(String phase, String mode) {
    return phases.computeIfAbsent(phase, k -> new ConcurrentHashMap<>()).computeIfAbsent(mode, m -> new Tally(phase + " " + m));
  }

  /** Stops sending and waits for the requests in flight to end. */
  public void stop() {
    stop = true;
    try {
      stopped.await(timeoutMs + 10_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The phases in the order they began, each with its modes. */
  public synchronized Map<String, Map<String, Tally>> phases() {
    Map<String, Map<String, Tally>> out = new LinkedHashMap<>();
    for (String p : order) {
      Map<String, Tally> byMode = new LinkedHashMap<>();
      for (Mode m : modes) byMode.put(m.name(), tally(p, m.name()));
      out.put(p, byMode);
    }
    return out;
  }

  /** Failures of every mode in the phases whose names start with {@code prefix}. */
  public long failed(String prefix) {
    return phases().entrySet().stream().filter(p -> p.getKey().startsWith(prefix))
        .flatMap(p -> p.getValue().values().stream()).mapToLong(Tally::failed).sum();
  }

  public long broken(String prefix) {
    return phases().entrySet().stream().filter(p -> p.getKey().startsWith(prefix))
        .flatMap(p -> p.getValue().values().stream()).mapToLong(Tally::broken).sum();
  }

  public long requests(String prefix) {
    return phases().entrySet().stream().filter(p -> p.getKey().startsWith(prefix))
        .flatMap(p -> p.getValue().values().stream()).mapToLong(t -> t.stats.completed()).sum();
  }

  /**
   * How a request ended, as a client tells it: {@code ok}; a refusal by status and who sent it (the router's error
   * type, or haproxy's own page); a broken stream (a 200 that did not end with {@code [DONE]}); a transport error
   * before any answer; a timeout.
   */
  public static String kind(Exchange e) {
    return switch (e.outcome()) {
      case OK -> "ok";
      case HTTP_ERROR -> e.status() + " " + refusal(e.detail());
      case STREAM_ERROR, NO_DONE -> "broken stream: " + e.outcome().name().toLowerCase();
      case TRANSPORT_ERROR -> e.status() == 200 ? "broken stream: transport error" : "transport error";
      case TIMEOUT -> "timeout";
      case CANCELLED -> "cancelled";
    };
  }

  private static String refusal(String body) {
    if (body == null) return "(no body)";
    if (body.contains("No server is available")) return "haproxy: no server is available";
    if (body.contains("<html>") || body.contains("<h1>")) return "haproxy: " + body.replaceAll("<[^>]+>", " ").replaceAll("\\s+", " ").strip();
    try {
      JsonObject error = new JsonObject(body).getJsonObject("error");
      return error.getString("type") + ": " + error.getString("message");
    } catch (RuntimeException notJson) {
      return body;
    }
  }

  public JsonObject toJson() {
    JsonObject json = new JsonObject();
    phases().forEach((p, byMode) -> {
      JsonObject o = new JsonObject();
      byMode.forEach((m, t) -> o.put(m, new JsonObject().put("kinds", new JsonObject(new TreeMap<>(t.kinds))).put("stats", t.stats.toJson())));
      json.put(p, o);
    });
    return json;
  }
}
