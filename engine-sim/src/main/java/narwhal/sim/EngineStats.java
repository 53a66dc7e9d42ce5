package narwhal.sim;

import io.vertx.core.json.JsonObject;

import java.util.concurrent.atomic.AtomicLong;

/** Counters and gauges of one engine, read by {@code /sim/stats}, {@link SimEngine#stats()} and {@code /metrics}. */
final class EngineStats {

  final AtomicLong requests = new AtomicLong();
  final AtomicLong handoffsCreated = new AtomicLong();
  final AtomicLong handoffsFreed = new AtomicLong();
  final AtomicLong handoffsExpired = new AtomicLong();
  final AtomicLong kvTransferred = new AtomicLong();
  final AtomicLong kvRecomputed = new AtomicLong();
  final AtomicLong kvTransferFailed = new AtomicLong();
  final AtomicLong promptTokens = new AtomicLong();
  final AtomicLong generationTokens = new AtomicLong();
  final AtomicLong running = new AtomicLong();
  final AtomicLong waiting = new AtomicLong();
  /**
   * Of {@link #waiting}: decode requests whose KV is still being pulled from their producer (vLLM's
   * {@code WAITING_FOR_REMOTE_KVS}, skipped by its scheduler and reported as waiting for reason {@code deferred}).
   */
  final AtomicLong deferred = new AtomicLong();
  final AtomicLong unauthorized = new AtomicLong();
  final AtomicLong prefixQueries = new AtomicLong();
  final AtomicLong prefixHits = new AtomicLong();
  final Histogram ttft = new Histogram(Histogram.TTFT_BUCKETS);
  final Histogram e2e = new Histogram(Histogram.REQUEST_LATENCY_BUCKETS);
  final AtomicLong tokenizeRequests = new AtomicLong();
  /** Completions and chat requests from their arrival to their response's end or their connection's close. */
  final AtomicLong inProgress = new AtomicLong();
  /** The most {@link #inProgress} has been since the engine started. */
  final AtomicLong peakInProgress = new AtomicLong();
  /** The most {@link #waiting} has been since the engine started. */
  final AtomicLong peakWaiting = new AtomicLong();
  /** GET requests received on the paths a router reads the engine by, whatever they were answered. */
  final AtomicLong metricsReads = new AtomicLong();
  final AtomicLong healthReads = new AtomicLong();
  final AtomicLong modelsReads = new AtomicLong();
  /** When {@code /metrics} was last read ({@link System#nanoTime}), 0 before the first read. */
  private long lastMetricsReadNs;
  /** {@code /metrics} reads since the last {@link #markMetricsReads mark}, and the longest gap that ended since. */
  private long metricsReadsSinceMark;
  private long longestMetricsGapNs;

  /** A {@code GET /metrics} arrived: counted, and the time since the one before measured. */
  void metricsRead() {
    metricsReads.incrementAndGet();
    long now = System.nanoTime();
    synchronized (this) {
      if (lastMetricsReadNs != 0) longestMetricsGapNs = Math.max(longestMetricsGapNs, now - lastMetricsReadNs);
      lastMetricsReadNs = now;
      metricsReadsSinceMark++;
    }
  }

  /**
   * Starts a new window for {@code metrics_since_mark} and {@code metrics_longest_gap_ms}; the read before the mark is
   * kept, so a gap that ends after the mark counts whole.
   */
  synchronized void markMetricsReads() {
    metricsReadsSinceMark = 0;
    longestMetricsGapNs = 0;
  }

  private synchronized JsonObject metricsWindow(JsonObject reads) {
    long now = System.nanoTime();
    return reads.put("metrics_since_mark", metricsReadsSinceMark)
      .put("metrics_longest_gap_ms", longestMetricsGapNs / 1_000_000)
      .put("metrics_unread_ms", lastMetricsReadNs == 0 ? null : (now - lastMetricsReadNs) / 1_000_000);
  }

  /** A request entered the waiting queue (it leaves it by a decrement of {@link #waiting}). */
  void requestWaiting() {
    peakWaiting.accumulateAndGet(waiting.incrementAndGet(), Math::max);
  }

  /** A completions or chat request arrived: it counts in progress until {@link #requestEnded}. */
  void requestArrived() {
    long now = inProgress.incrementAndGet();
    peakInProgress.accumulateAndGet(now, Math::max);
  }

  void requestEnded() {
    inProgress.decrementAndGet();
  }

  /** Prefix cache hits over queries, in tokens (vLLM's hit rate); 0 before any query. */
  double hitRate() {
    long queries = prefixQueries.get();
    return queries == 0 ? 0 : (double) prefixHits.get() / queries;
  }

  JsonObject toJson(int handoffsHeld, int blocksInUse, int totalBlocks, int blocksCached, long steps, long overlappingSteps) {
    return new JsonObject()
      .put("requests", requests.get())
      .put("running", running.get())
      .put("waiting", waiting.get())
      .put("peak_waiting", peakWaiting.get())
      .put("deferred", deferred.get())
      .put("handoffs_created", handoffsCreated.get())
      .put("handoffs_held", handoffsHeld)
      .put("handoffs_freed", handoffsFreed.get())
      .put("handoffs_expired", handoffsExpired.get())
      .put("kv_transferred", kvTransferred.get())
      .put("kv_recomputed", kvRecomputed.get())
      .put("kv_transfer_failed", kvTransferFailed.get())
      .put("prompt_tokens", promptTokens.get())
      .put("generation_tokens", generationTokens.get())
      .put("blocks_in_use", blocksInUse)
      .put("total_blocks", totalBlocks)
      .put("unauthorized", unauthorized.get())
      .put("blocks_cached", blocksCached)
      .put("prefix_cache_queries", prefixQueries.get())
      .put("prefix_cache_hits", prefixHits.get())
      .put("prefix_cache_hit_rate", hitRate())
      .put("engine_steps", steps)
      .put("overlapping_steps", overlappingSteps)
      .put("tokenize_requests", tokenizeRequests.get())
      .put("requests_in_progress", inProgress.get())
      .put("peak_requests_in_progress", peakInProgress.get())
      .put("reads", metricsWindow(new JsonObject()
        .put("metrics", metricsReads.get())
        .put("health", healthReads.get())
        .put("models", modelsReads.get())));
  }
}
