package narwhal.bench.load;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one load phase measured: exchanges that ended inside the measured window are counted (those ending in
 * the warm-up or after the window are not), so a rate is completions per second of the window, with first-token, inter-token and whole-request histograms, outcomes,
 * HTTP statuses, tokens, and a per-second timeline of successes and failures. Synchronised: workers on
 * several event loops add to it.
 */
public final class RunStats {
  private static final int MAX_SAMPLES = 8;

  private final String label;
  private long windowStart = Long.MIN_VALUE;
  private long windowEnd = Long.MAX_VALUE;
  private long timelineOrigin;
  private final LatencyHistogram firstToken = new LatencyHistogram();
  private final LatencyHistogram itl = new LatencyHistogram();
  private final LatencyHistogram latency = new LatencyHistogram();
  private final Map<Exchange.Outcome, Long> outcomes = new EnumMap<>(Exchange.Outcome.class);
  private final Map<Integer, Long> statuses = new TreeMap<>();
  private final List<String> samples = new ArrayList<>();
  private final List<long[]> timeline = new ArrayList<>();
  private long completed;
  private long ok;
  private long tokens;
  private long outside;

  public RunStats(String label) {
    this.label = label;
    this.timelineOrigin = System.nanoTime();
  }

  public String label() {
    return label;
  }

  /** Only exchanges that end between {@code start} and {@code end} count. */
  public synchronized RunStats window(long start, long end) {
    this.windowStart = start;
    this.windowEnd = end;
    this.timelineOrigin = start;
    return this;
  }

  public synchronized void add(Exchange e) {
    if (e.endNanos() < windowStart || e.endNanos() > windowEnd) {
      outside++;
      return;
    }
    completed++;
    outcomes.merge(e.outcome(), 1L, Long::sum);
    if (e.status() > 0) statuses.merge(e.status(), 1L, Long::sum);
    tokens += e.tokens();
    int second = (int) Math.max(0, (e.endNanos() - timelineOrigin) / 1_000_000_000L);
    while (timeline.size() <= second) timeline.add(new long[2]);
    if (e.ok()) {
      ok++;
      timeline.get(second)[0]++;
      latency.record(e.latency());
      if (e.firstToken() >= 0) firstToken.record(e.firstToken());
      for (long gap : e.gaps()) itl.record(gap);
    } else {
      timeline.get(second)[1]++;
      if (e.outcome() != Exchange.Outcome.CANCELLED && samples.size() < MAX_SAMPLES) {
        samples.add(e.outcome() + (e.status() > 0 ? " " + e.status() : "") + (e.detail() == null ? "" : ": " + e.detail()));
      }
    }
  }

  public synchronized double seconds() {
    return windowEnd == Long.MAX_VALUE ? 0 : (windowEnd - windowStart) / 1e9;
  }

  public synchronized long completed() {
    return completed;
  }

  public synchronized long ok() {
    return ok;
  }

  /** Exchanges that ended other than OK, cancellations by the client excluded. */
  public synchronized long errors() {
    return completed - ok - outcomes.getOrDefault(Exchange.Outcome.CANCELLED, 0L);
  }

  public synchronized long count(Exchange.Outcome outcome) {
    return outcomes.getOrDefault(outcome, 0L);
  }

  public synchronized long tokens() {
    return tokens;
  }

  /** Successful requests per second of the window. */
  public synchronized double rps() {
    double s = seconds();
    return s <= 0 ? 0 : ok / s;
  }

  /** Output tokens received per second of the window (tokens of successful requests and of failed ones alike). */
  public synchronized double tokensPerSecond() {
    double s = seconds();
    return s <= 0 ? 0 : tokens / s;
  }

  public LatencyHistogram firstToken() {
    return firstToken;
  }

  public LatencyHistogram itl() {
    return itl;
  }

  public LatencyHistogram latency() {
    return latency;
  }

  public synchronized List<String> errorSamples() {
    return List.copyOf(samples);
  }

  public synchronized Map<Integer, Long> statuses() {
    return Map.copyOf(statuses);
  }

  /** Per second of the window: {ok, failed}. */
  public synchronized List<long[]> timeline() {
    List<long[]> copy = new ArrayList<>();
    timeline.forEach(t -> copy.add(t.clone()));
    return copy;
  }

  /** Merges another phase into this one (same label, windows added up). */
  public synchronized void absorb(RunStats other) {
    synchronized (other) {
      double mine = seconds();
      double theirs = other.seconds();
      completed += other.completed;
      ok += other.ok;
      tokens += other.tokens;
      outside += other.outside;
      other.outcomes.forEach((k, v) -> outcomes.merge(k, v, Long::sum));
      other.statuses.forEach((k, v) -> statuses.merge(k, v, Long::sum));
      for (String s : other.samples) if (samples.size() < MAX_SAMPLES) samples.add(s);
      firstToken.merge(other.firstToken);
      itl.merge(other.itl);
      latency.merge(other.latency);
      long total = Math.round((mine + theirs) * 1e9);
      windowStart = 0;
      windowEnd = total;
    }
  }

  public synchronized JsonObject toJson() {
    JsonObject out = new JsonObject().put("label", label).put("window_s", seconds()).put("completed", completed)
        .put("ok", ok).put("errors", errors()).put("rps", rps()).put("tokens", tokens).put("tokens_per_s", tokensPerSecond())
        .put("first_token", firstToken.toJson()).put("inter_token", itl.toJson()).put("latency", latency.toJson());
    JsonObject o = new JsonObject();
    outcomes.forEach((k, v) -> o.put(k.name().toLowerCase(), v));
    JsonObject s = new JsonObject();
    statuses.forEach((k, v) -> s.put(String.valueOf(k), v));
    return out.put("outcomes", o).put("statuses", s).put("error_samples", new JsonArray(List.copyOf(samples)));
  }
}
