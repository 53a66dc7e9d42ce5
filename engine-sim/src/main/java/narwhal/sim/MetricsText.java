package narwhal.sim;

/**
 * Renders {@code /metrics} in Prometheus text format with vLLM's metric names and labels
 * ({@code engine}, {@code model_name}; vLLM's {@code vllm/v1/metrics/loggers.py}), plus the simulator's own
 * {@code sim:*} KV counters.
 */
final class MetricsText {

  private MetricsText() {
  }

  static String render(SimEngine engine) {
    EngineStats s = engine.counters();
    int held = engine.handoffs().held();
    int inUse = engine.blocks().inUse();
    double usage = (double) inUse / engine.blocks().total();
    String bare = "engine=\"0\",model_name=\"" + escape(engine.config().servedNames().get(0)) + "\"";
    String labels = "{" + bare + "}";
    StringBuilder out = new StringBuilder(2048);
    metric(out, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", labels, s.running.get());
    long waiting = s.waiting.get();
    long deferred = Math.min(waiting, s.deferred.get());
    metric(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", labels, waiting);
    out.append("# HELP vllm:num_requests_waiting_by_reason Number of requests waiting, by reason: 'capacity' = waiting for "
        + "scheduling capacity, 'deferred' = deferred by transient constraints (KV transfer).\n")
      .append("# TYPE vllm:num_requests_waiting_by_reason gauge\n")
      .append("vllm:num_requests_waiting_by_reason{").append(bare).append(",reason=\"capacity\"} ").append((double) (waiting - deferred)).append('\n')
      .append("vllm:num_requests_waiting_by_reason{").append(bare).append(",reason=\"deferred\"} ").append((double) deferred).append('\n');
    metric(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", labels, usage);
    metric(out, "vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.",
      labels, s.prefixQueries.get());
    metric(out, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
      labels, s.prefixHits.get());
    metric(out, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", labels, s.promptTokens.get());
    metric(out, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", labels, s.generationTokens.get());
    histogram(out, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", bare, s.ttft);
    histogram(out, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", bare, s.e2e);
    metric(out, "vllm:nixl_num_kv_expired_reqs_total", "counter",
      "Number of requests whose KV blocks expired before a decode engine read them.", labels, s.handoffsExpired.get());
    metric(out, "vllm:nixl_num_failed_transfers_total", "counter", "Number of failed NIXL KV transfers.", labels,
      s.kvTransferFailed.get());
    metric(out, "sim:kv_transferred_total", "counter", "Decode requests whose KV was pulled from a producer.", labels,
      s.kvTransferred.get());
    metric(out, "sim:kv_recomputed_total", "counter", "Decode requests that recomputed their prompt instead.", labels,
      s.kvRecomputed.get());
    metric(out, "sim:kv_handoffs_held", "gauge", "KV handoffs held for a decode engine to pull.", labels, held);
    metric(out, "sim:kv_blocks_in_use", "gauge", "KV cache blocks in use (running requests and held handoffs).", labels, inUse);
    metric(out, "sim:kv_blocks_cached", "gauge", "KV cache blocks keeping a prefix-cache hash (held or evictable).", labels,
      engine.blocks().cached());
    return out.toString();
  }

  private static void metric(StringBuilder out, String name, String type, String help, String labels, double value) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n')
      .append("# TYPE ").append(name).append(' ').append(type).append('\n')
      .append(name).append(labels).append(' ').append(value).append('\n');
  }

  private static void histogram(StringBuilder out, String name, String help, String labels, Histogram h) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n')
      .append("# TYPE ").append(name).append(" histogram\n");
    h.render(out, name, labels);
  }

  private static String escape(String value) {
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }
}
