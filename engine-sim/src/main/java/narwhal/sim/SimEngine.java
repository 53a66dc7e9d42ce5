package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;

import java.time.Clock;
import java.util.List;

/**
 * A simulated vLLM engine that speaks the real wire protocol: OpenAI-compatible completions and
 * chat (streaming and not), lifecycle endpoints, NIXL pull-mode KV handoffs through a side-channel
 * server, a latency model, and injectable faults. Tests and demos start it in-process on port 0.
 *
 * <p>Generation is deterministic (a function of prompt, seed and temperature), so the same request
 * gives the same text on any engine, aggregated or disaggregated. Lease expiry of held KV blocks
 * follows the injected {@link Clock}, so tests drive it instead of waiting.
 */
public final class SimEngine {

  private final Vertx vertx;
  private final SimEngineOptions options;
  private final Clock clock;
  private final EngineStats stats = new EngineStats();
  private final BlockPool blocks;
  private final HandoffStore handoffs;
  private final FaultPlan faults;
  private final RequestLog log;
  private final BatchScheduler scheduler;
  private final EngineVerticle verticle;
  private volatile boolean shuttingDown;
  private final long startedAt;
  private volatile KvPuller puller;
  private volatile String deploymentId;

  private SimEngine(Vertx vertx, SimEngineOptions options, Clock clock) {
    this.vertx = vertx;
    this.options = new SimEngineOptions(options).withProfileApplied();
    this.clock = clock;
    this.blocks = new BlockPool(options.getTotalBlocks());
    this.handoffs = new HandoffStore(clock, blocks, stats, options.getEngineId(), options.getKvLeaseSeconds());
    this.faults = new FaultPlan(clock);
    options.getFaults().forEach(rule -> faults.add((JsonObject) rule));
    this.log = new RequestLog(options.getRequestLogLimit());
    this.scheduler = new BatchScheduler(vertx, this.options);
    this.verticle = new EngineVerticle(this);
    this.startedAt = clock.instant().getEpochSecond();
  }

  /** Starts an engine whose KV leases follow the system clock. */
  public static Future<SimEngine> start(Vertx vertx, SimEngineOptions options) {
    return start(vertx, options, Clock.systemUTC());
  }

  /** Starts an engine; completes once the inference and side-channel servers both listen. */
  public static Future<SimEngine> start(Vertx vertx, SimEngineOptions options, Clock clock) {
    SimEngine engine;
    try {
      engine = new SimEngine(vertx, new SimEngineOptions(options).validate(), clock);
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    return vertx.deployVerticle(engine.verticle).map(id -> {
      engine.deploymentId = id;
      return engine;
    });
  }

  public int port() {
    return verticle.port();
  }

  /** Base URL of the inference server, e.g. {@code http://127.0.0.1:41234}. */
  public String url() {
    return "http://" + advertisedHost() + ":" + port();
  }

  public int sideChannelPort() {
    return verticle.sideChannelPort();
  }

  public String engineId() {
    return options.getEngineId();
  }

  public String name() {
    return options.getName();
  }

  /** The options this engine runs with, ports resolved to the ones actually bound. */
  public SimEngineOptions options() {
    return new SimEngineOptions(options).setPort(port()).setSideChannelPort(sideChannelPort());
  }

  /**
   * Every inference request received, oldest first: {@code path}, {@code request_id} (the
   * {@code x-request-id} header), {@code phase} (prefill or decode), {@code body} as received,
   * {@code kv} (transferred, recomputed, failed or none) and {@code fault} (the kind applied, or null).
   */
  public List<JsonObject> requests() {
    return log.snapshot();
  }

  public void clearRequests() {
    log.clear();
  }

  /**
   * A slower engine from now on (a fault: a throttled or shared GPU): every later batch step costs {@code factor} times
   * what the latency model says. 1 restores it; with the zero latency model nothing changes.
   */
  public void slowDown(double factor) {
    if (!(factor >= 1 && factor <= 1000)) {
      throw new IllegalArgumentException("slowdown factor " + factor + ": expected a number from 1 to 1000");
    }
    scheduler.slowDown(factor);
  }

  /** The step-cost factor {@link #slowDown} set (1: none). */
  public double slowdown() {
    return scheduler.slowdown();
  }

  /** The engine's fault rules; changes apply to the next requests. */
  public FaultPlan faults() {
    return faults;
  }

  /**
   * Starts a new window of {@code /metrics} reads in {@link #stats()} ({@code reads.metrics_since_mark},
   * {@code reads.metrics_longest_gap_ms}), as {@code POST /sim/stats/mark} does.
   */
  public void markMetricsReads() {
    stats.markMetricsReads();
  }

  /**
   * Counters: {@code requests}, {@code running}, {@code waiting} (and {@code peak_waiting}, the most since start), {@code handoffs_created},
   * {@code handoffs_held} (held now), {@code handoffs_freed}, {@code handoffs_expired},
   * {@code kv_transferred}, {@code kv_recomputed}, {@code kv_transfer_failed},
   * {@code prompt_tokens}, {@code generation_tokens}, {@code blocks_in_use}, {@code total_blocks},
   * {@code unauthorized} (requests refused for a missing or wrong API key), {@code blocks_cached} (blocks keeping
   * a prefix-cache hash), {@code prefix_cache_queries} and {@code prefix_cache_hits} (in prompt tokens),
   * {@code prefix_cache_hit_rate} (hits over queries) {@code engine_steps} (batch steps run) and {@code overlapping_steps} (steps timed while another was in flight: 0),
   * {@code requests_in_progress} and {@code peak_requests_in_progress} (completions and chat requests from arrival to
   * their response's end or their connection's close: now, and the most since start), and {@code reads}: the GET requests
   * received on {@code /metrics}, {@code /health} and {@code /v1/models} ({@code {"metrics": n, "health": n, "models": n}}),
   * with the {@code /metrics} reads since the last {@link #markMetricsReads mark} ({@code metrics_since_mark}), the
   * longest time between two in a row that ended since ({@code metrics_longest_gap_ms}) and the time since the last one
   * ({@code metrics_unread_ms}, null before any).
   */
  public JsonObject stats() {
    int held = handoffs.held();
    return stats.toJson(held, blocks.inUse(), blocks.total(), blocks.cached(), scheduler.steps(), scheduler.overlappingSteps());
  }

  /** Closes the inference port: new connections are refused until {@link #resumeListening()}. */
  public Future<Void> stopListening() {
    return verticle.stopListening();
  }

  /**
   * A graceful stop, as vLLM's on SIGTERM (uvicorn's): the inference port stops accepting connections at once (new
   * ones are refused), a request arriving on a connection already open is answered 503 "server is shutting down" (as
   * is {@code /health}), and the requests already running finish; each connection closes once its running request is
   * done, within {@code timeoutMs} (then it is closed). Completes when the port is closed.
   */
  public Future<Void> shutDown(long timeoutMs) {
    shuttingDown = true;
    return verticle.shutDown(timeoutMs);
  }

  /** Whether a {@link #shutDown graceful stop} has begun. */
  public boolean shuttingDown() {
    return shuttingDown;
  }

  /** Listens again on the same inference port. */
  public Future<Void> resumeListening() {
    return verticle.resumeListening();
  }

  /** Stops both servers and releases everything. */
  public Future<Void> close() {
    String id = deploymentId;
    deploymentId = null;
    return id == null ? Future.succeededFuture() : vertx.undeploy(id);
  }

  /** What {@code GET /attestation} reports: identity, KV geometry, connector config, side channel. */
  public JsonObject attestation() {
    String kvRole = switch (options.getRole()) {
      case "prefill" -> "kv_producer";
      case "decode" -> "kv_consumer";
      default -> "kv_both";
    };
    return new JsonObject()
      .put("name", options.getName())
      .put("role", options.getRole())
      .put("version", options.getVersion())
      .put("model", options.getModel())
      .put("dtype", "bfloat16")
      .put("block_size", options.getBlockSize())
      .put("num_gpu_blocks", options.getTotalBlocks())
      .put("max_model_len", options.getMaxModelLen())
      .put("kv_transfer_config", new JsonObject()
        .put("kv_connector", "NixlConnector")
        .put("kv_role", kvRole)
        .put("engine_id", engineId())
        .put("kv_load_failure_policy", options.getKvLoadFailurePolicy())
        .put("kv_connector_extra_config", new JsonObject()
          .put("kv_lease_duration", options.getKvLeaseSeconds())
          .put("transfer_mode", "pull")))
      .put("kv_side_channel", new JsonObject().put("host", advertisedHost()).put("port", sideChannelPort()))
      .put("started_at", startedAt);
  }

  @Override
  public String toString() {
    return "SimEngine[" + options.getName() + " " + options.getRole() + " " + url() + "]";
  }

  // ---- package-private collaborators

  /**
   * The key the engine wants from now on, as a restart with another {@code --api-key} would (tests of a rotated
   * engines' key keep the engine's address and state).
   */
  public void rotateApiKey(String key) {
    options.setApiKey(key);
  }

  /** The live options object (no copy): for the engine's own per-request use. */
  SimEngineOptions config() {
    return options;
  }

  Clock clock() {
    return clock;
  }

  EngineStats counters() {
    return stats;
  }

  BlockPool blocks() {
    return blocks;
  }

  HandoffStore handoffs() {
    return handoffs;
  }

  RequestLog log() {
    return log;
  }

  BatchScheduler scheduler() {
    return scheduler;
  }

  KvPuller puller() {
    return puller;
  }

  void attachPuller(KvPuller puller) {
    this.puller = puller;
  }

  int deadPort() {
    return verticle.deadPort();
  }

  /** The host put into URLs and descriptors: the bind host, or loopback for a wildcard bind. */
  String advertisedHost() {
    String host = options.getHost();
    return "0.0.0.0".equals(host) || "::".equals(host) ? "127.0.0.1" : host;
  }

  /** The {@code refuse} fault: stop listening, and resume after {@code seconds} when positive. */
  void refuse(double seconds) {
    stopListening().onSuccess(v -> {
      if (seconds > 0) {
        vertx.setTimer(Math.max(1, Math.round(seconds * 1000)), t -> resumeListening());
      }
    });
  }
}
