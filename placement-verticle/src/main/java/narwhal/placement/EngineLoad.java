package narwhal.placement;

import io.vertx.core.json.JsonObject;

/**
 * One reading of an engine's load from its {@code /metrics}, as vLLM publishes it: {@code vllm:num_requests_running},
 * {@code vllm:num_requests_waiting} and {@code vllm:kv_cache_usage_perc} (summed over the engine's label sets: a
 * data-parallel engine publishes one per rank), with when it was read and by which replica. {@code queued}: of the
 * waiting, those waiting for a place in the engine's batch ({@code vllm:num_requests_waiting_by_reason{reason="capacity"}}),
 * not for their KV to arrive ({@code reason="deferred"}: a decode leg pulling its KV is no queue); an engine that does
 * not publish the reasons (vLLM before them) has all its waiting taken as queued. A failed reading carries
 * its {@code error} and no figures: the engine's load is unknown, never zero. {@code idleReadings}: how many readings
 * in a row found the engine idle (nothing running or waiting, no leg placed since the one before), which slows its
 * readings down ({@link narwhal.common.config.PlacementConfig#readingIntervalMs}); bounded by {@link #MAX_IDLE_READINGS}.
 */
record EngineLoad(String iid, double running, double waiting, double queued, double kvUsage, long readAtMs, String reader,
                  String error, int idleReadings) {
  static final String RUNNING = "vllm:num_requests_running";
  static final String WAITING = "vllm:num_requests_waiting";
  static final String WAITING_BY_REASON = "vllm:num_requests_waiting_by_reason";
  static final String KV_USAGE = "vllm:kv_cache_usage_perc";
  /**
   * The most requests an engine's queue gauges (summed over its ranks) may count: more is no engine's load but a
   * broken one's, and taken as a figure it overflowed the candidates' mean load to infinity, which kept every prefix
   * on its producer however loaded.
   */
  static final double MAX_QUEUE = 1e9;
  static final int MAX_IDLE_READINGS = 16;

  EngineLoad(String iid, double running, double waiting, double kvUsage, long readAtMs, String reader, String error) {
    this(iid, running, waiting, waiting, kvUsage, readAtMs, reader, error, 0);
  }

  /** Idle: nothing running or waiting on a reading that worked. */
  boolean idle() {
    return ok() && running == 0 && waiting == 0;
  }

  /** This reading, counting the readings in a row before it that found the engine idle. */
  EngineLoad afterIdle(int before) {
    return new EngineLoad(iid, running, waiting, queued, kvUsage, readAtMs, reader, error, Math.min(MAX_IDLE_READINGS, before));
  }

  boolean ok() {
    return error == null;
  }

  static EngineLoad failed(String iid, long readAtMs, String reader, String error) {
    return new EngineLoad(iid, 0, 0, 0, readAtMs, reader, error);
  }

  /** Reads the three series from Prometheus text; a reading without the queue gauges is a failure (not a vLLM engine). */
  static EngineLoad parse(String iid, String text, long readAtMs, String reader) {
    double running = 0;
    double waiting = 0;
    double capacity = 0;
    double kv = 0;
    boolean sawRunning = false;
    boolean sawWaiting = false;
    boolean sawCapacity = false;
    for (String line : text.split("\n")) {
      if (line.isEmpty() || line.charAt(0) == '#') continue;
      String name = metricName(line);
      if (name == null) continue;
      double value;
      try {
        value = Double.parseDouble(sampleValue(line, name));
      } catch (NumberFormatException notANumber) {
        continue;
      }
      if ((RUNNING.equals(name) || WAITING.equals(name) || KV_USAGE.equals(name)) && !(value >= 0 && Double.isFinite(value))) {
        return failed(iid, readAtMs, reader, name + " is " + value + ": not a load (expected a finite number of at least 0)");
      }
      switch (name) {
        case RUNNING -> {
          running += value;
          sawRunning = true;
        }
        case WAITING -> {
          waiting += value;
          sawWaiting = true;
        }
        case KV_USAGE -> kv = Math.max(kv, value);
        case WAITING_BY_REASON -> {
          if (reasonIsCapacity(line) && value >= 0 && Double.isFinite(value)) {
            capacity += value;
            sawCapacity = true;
          }
        }
        default -> { }
      }
    }
    if (!sawRunning || !sawWaiting) {
      return failed(iid, readAtMs, reader, "no " + RUNNING + " and " + WAITING + " in /metrics");
    }
    if (running > MAX_QUEUE || waiting > MAX_QUEUE) {
      String name = running > MAX_QUEUE ? RUNNING : WAITING;
      return failed(iid, readAtMs, reader, name + " is " + (running > MAX_QUEUE ? running : waiting)
          + ": not a load (expected at most 1e9 requests)");
    }
    if (running + waiting > MAX_QUEUE) {
      return failed(iid, readAtMs, reader, RUNNING + " + " + WAITING + " is " + (running + waiting)
          + ": not a load (expected a queue of at most 1e9 requests)");
    }
    double queued = sawCapacity ? Math.min(waiting, capacity) : waiting;
    return new EngineLoad(iid, running, waiting, queued, kv, readAtMs, reader, null, 0);
  }

  /** The sample's value: the first token after its name and labels (a timestamp may follow it). */
  private static String sampleValue(String line, String name) {
    int from = line.charAt(name.length()) == '{' ? line.lastIndexOf('}') + 1 : name.length();
    if (from <= 0) throw new NumberFormatException("no value");
    String rest = line.substring(from).trim();
    int end = 0;
    while (end < rest.length() && !Character.isWhitespace(rest.charAt(end))) end++;
    return rest.substring(0, end);
  }

  /**
   * Whether the series' own {@code reason} label is {@code capacity}: the label named reason, not one whose name merely
   * ends in it ({@code sub_reason="capacity"} on a deferred series is no queue).
   */
  private static boolean reasonIsCapacity(String line) {
    String label = "reason=\"capacity\"";
    int close = line.lastIndexOf('}');
    for (int at = line.indexOf(label); at > 0 && at < close; at = line.indexOf(label, at + 1)) {
      char before = line.charAt(at - 1);
      if (before == '{' || before == ',' || before == ' ') return true;
    }
    return false;
  }

  private static String metricName(String line) {
    int end = 0;
    while (end < line.length() && line.charAt(end) != '{' && line.charAt(end) != ' ') end++;
    return end == 0 || end == line.length() ? null : line.substring(0, end);
  }

  JsonObject toJson() {
    JsonObject json = new JsonObject().put("iid", iid).put("read_at_ms", readAtMs).put("reader", reader);
    if (!ok()) return json.put("error", error);
    if (idleReadings > 0) json.put("idle_readings", idleReadings);
    json.put("running", running).put("waiting", waiting).put("kv_usage", kvUsage);
    return queued == waiting ? json : json.put("queued", queued);
  }

  static EngineLoad fromJson(JsonObject json) {
    try {
      return readJson(json);
    } catch (RuntimeException malformed) {
      return null;
    }
  }

  private static EngineLoad readJson(JsonObject json) {
    if (json == null || json.getString("iid") == null) return null;
    long at = json.getLong("read_at_ms", 0L);
    String reader = json.getString("reader", "");
    if (json.getString("error") != null) return failed(json.getString("iid"), at, reader, json.getString("error"));
    int idle = Math.max(0, Math.min(MAX_IDLE_READINGS, json.getInteger("idle_readings", 0)));
    double waiting = json.getDouble("waiting", 0.0);
    double queued = Math.max(0, Math.min(waiting, json.getDouble("queued", waiting)));
    return new EngineLoad(json.getString("iid"), json.getDouble("running", 0.0), waiting, queued,
        json.getDouble("kv_usage", 0.0), at, reader, null, idle);
  }
}
