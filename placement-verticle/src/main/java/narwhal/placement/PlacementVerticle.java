package narwhal.placement;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.core.shareddata.SharedData;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.ClockBound;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.bus.Failures;
import narwhal.common.bus.FleetHoldEvent;
import narwhal.common.bus.LocalPlacement;
import narwhal.common.bus.Readiness;
import narwhal.common.bus.Reservation;
import narwhal.common.bus.ReserveRequest;
import narwhal.common.bus.SharedState;
import narwhal.common.bus.StateVersion;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.Phase;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Answers "which engine for this phase of this request" on the local bus and keeps per-engine reservations
 * per phase. Engine states arrive as fleet-change messages (from the breaker of any replica) and from the
 * cluster-wide {@code narwhal.engine-state} map, read at start (a replica that joins late gets the current
 * state) and again every resync interval, {@value #DEFAULT_RESYNC_MS} ms: a missed message is repaired sooner by the
 * breaker of this node, whose own resync (every second) publishes here each state it took from the map; of two
 * versions of an engine's state the newer ({@code changed_ms}, {@code origin}) wins. No network call sits on the request path.
 * In: {@link Addresses#PLACEMENT_RESERVE}, {@link Addresses#PLACEMENT_RELEASE}, {@link Addresses#PLACEMENT_STATE},
 * {@link Addresses#FLEET_CHANGED}. A stopping replica's refusals and readiness are the router's ({@code Admission}):
 * placement keeps placing the legs of the requests in flight until the router is gone. Routers on this node reserve
 * and release through {@link LocalPlacement} (the same table and decision, no bus round trip). A prefill is refused
 * when no engine could decode it: its KV would be pinned on the producer for nothing.
 */
public final class PlacementVerticle extends VerticleBase {
  static final long DEFAULT_RESYNC_MS = 10_000;
  /**
   * How long after a peer joined the snapshot is asked for: a member back from a merge registers its consumers again,
   * and a request before that finds no one.
   */
  private static final long PEER_SETTLE_MS = 2_000;
  /** How often a snapshot after a peer joined is asked again when no peer answered yet. */
  private static final int PEER_SNAPSHOT_TRIES = 4;
  private static final String FLEET_HOLD = "FLEET_HOLD: the fleet is held for a whole-wave restart";

  private final PlacementTable table;
  private final long resyncMs;
  /** The configuration and meters of a replica's placement; null for a bare table (tests of placement alone). */
  private final Supplier<NarwhalConfig> config;
  private final MeterRegistry registry;
  private final UnaryOperator<String> env;
  private final UnaryOperator<SharedData> sharedData;
  private LoadReadings loads;
  private ModelListings listings;
  /** The version of each engine's state and of the fleet hold last applied. */
  private final Map<String, StateVersion> versions = new HashMap<>();
  /** When a reload added each engine (epoch ms), for {@link EngineStateEvent#leftoverFor}. */
  private final Map<String, Long> addedAt = new HashMap<>();
  /** Read by routers' event loops through {@link Local}. */
  private volatile boolean fleetHold;
  private final Local local = new Local();
  /** Recomputed on this verticle's context whenever what it depends on changes; read by readiness checks. */
  private volatile Readiness readiness = Readiness.NO_PLACEMENT;
  private AsyncMap<String, String> shared;
  private long resyncTimer = -1;
  /** This replica's name in what it shares with the others (load readings, prefix placements). */
  private final String replica = "placement-" + java.util.UUID.randomUUID().toString().substring(0, 8);
  private PrefixExchange prefixes;

  public PlacementVerticle(List<EngineConfig> engines) {
    this(engines, DEFAULT_RESYNC_MS);
  }

  /** @param resyncMs how often the shared state map is read again */
  public PlacementVerticle(List<EngineConfig> engines, long resyncMs) {
    this.table = new PlacementTable(engines);
    this.resyncMs = resyncMs;
    this.config = null;
    this.registry = null;
    this.env = name -> null;
    this.sharedData = UnaryOperator.identity();
  }

  /**
   * A replica's placement, with {@code placement.*} (policy, engine load readings) hot-reloaded from {@code config}.
   * @param env reads environment variables (the engines' API key, sent with each {@code /metrics} reading)
   */
  public PlacementVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, UnaryOperator<String> env) {
    this(config, registry, env, UnaryOperator.identity());
  }

  /** @param sharedData wraps the shared data the engine load readings go through (tests make it stall) */
  public PlacementVerticle(Supplier<NarwhalConfig> config, MeterRegistry registry, UnaryOperator<String> env,
                           UnaryOperator<SharedData> sharedData) {
    NarwhalConfig cfg = config.get();
    this.table = new PlacementTable(cfg.engines(), System::currentTimeMillis);
    this.table.configure(cfg.placement(), cfg.recovery().ejectAfter());
    this.resyncMs = DEFAULT_RESYNC_MS;
    this.config = config;
    this.registry = registry;
    this.env = env;
    this.sharedData = sharedData;
  }

  /**
   * A peer joined (or the split clusters merged): its index is asked for {@link #PEER_SETTLE_MS} later, and again while
   * no peer answers — after a merge the peers' bus registrations reach this replica some seconds after the membership
   * does (seen under load: the one ask found only this replica's own handler).
   */
  private void snapshotAfterJoin(int tries) {
    vertx.setTimer(PEER_SETTLE_MS, t -> prefixes.snapshot("peer_joined").onComplete(v -> {
      JsonObject last = prefixes.view();
      if (tries > 1 && last != null && "no_peer".equals(last.getString("outcome"))) snapshotAfterJoin(tries - 1);
    }));
  }

  @Override
  public Future<?> start() {
    prefixes = new PrefixExchange(vertx, table, replica);
    List<MessageConsumer<JsonObject>> consumers = List.of(
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_RESERVE, this::reserve),
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_RELEASE, msg -> table.release(msg.body().getString("id"))),
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_STATE, msg -> msg.reply(snapshot())),
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_PEER_JOINED, msg -> snapshotAfterJoin(PEER_SNAPSHOT_TRIES)),
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_UNLIST,
            msg -> table.unlist(msg.body().getString("iid"), msg.body().getString("model"))),
        vertx.eventBus().localConsumer(Addresses.PLACEMENT_MODELS, msg -> msg.reply(new JsonObject()
            .put("data", new JsonArray(new java.util.ArrayList<>(table.servedCards()))))),
        vertx.eventBus().localConsumer(Addresses.CONFIG_CHANGED, msg -> reconfigured(NarwhalConfig.fromJson(msg.body()))),
        vertx.eventBus().consumer(Addresses.FLEET_CHANGED, this::fleetChanged),
        vertx.eventBus().consumer(Addresses.STREAK_CHANGED, msg -> {
          JsonObject body = ClusterSeal.of(vertx).open(Addresses.STREAK_CHANGED, msg.body());
          if (body != null) streakChanged(body);
        }));
    return Future.all(consumers.stream().map(MessageConsumer::completion).toList())
        .compose(v -> vertx.sharedData().<String, String>getAsyncMap(SharedState.ENGINE_STATE_MAP))
        .compose(map -> {
          shared = map;
          return resync();
        })
        .onSuccess(v -> {
          refreshReadiness();
          resyncTimer = vertx.setPeriodic(resyncMs, t -> resync().otherwise(err -> null));
          vertx.sharedData().getLocalMap(LocalPlacement.MAP).put(LocalPlacement.KEY, local);
          if (config != null) {
            NarwhalConfig cfg = config.get();
            loads = new LoadReadings(vertx, sharedData.apply(vertx.sharedData()), config, table, replica,
                () -> config.get().engine().engineApiKey(env), registry, () -> prefixes.snapshot("rejoin"));
            loads.track(cfg.engines());
            loads.arm();
            listings = new ModelListings(vertx, config, table, () -> config.get().engine().engineApiKey(env), replica);
            listings.arm();
          }
        })
        .compose(v -> config == null ? Future.succeededFuture() : prefixes.start());
  }

  @Override
  public Future<?> stop() {
    vertx.sharedData().getLocalMap(LocalPlacement.MAP).remove(LocalPlacement.KEY);
    vertx.cancelTimer(resyncTimer);
    if (loads != null) loads.stop();
    if (listings != null) listings.stop();
    prefixes.stop();
    return Future.succeededFuture();
  }

  /** How long a verdict on the engines' room is reused: every attempt asks, readings change once an interval. */
  private static final long ROOM_FRESH_NANOS = 20_000_000L;

  /** A verdict on the engines' room and when it was taken ({@link System#nanoTime}). */
  private record RoomVerdict(LocalPlacement.Room room, int queueMax, long atNanos) {
  }

  /** The placement decision, as routers on this node reach it and as {@link #reserve(Message)} answers it on the bus. */
  private final class Local implements LocalPlacement {
    @Override
    public Future<Reservation> reserve(ReserveRequest request) {
      if (fleetHold) return refused(Failures.FLEET_HOLD, FLEET_HOLD);
      String model = request.model();
      if (model != null && !table.knows(model)) {
        return refused(Failures.MODEL_NOT_FOUND, "MODEL_NOT_FOUND: no engine serves model " + model);
      }
      if (request.phase() == Phase.PREFILL && !table.covers(Phase.DECODE, model)) {
        return refused(Failures.NO_ENGINE, "NO_ENGINE: no engine can take the decode phase" + forModel(model));
      }
      return table.reserve(request.phase(), new HashSet<>(request.exclude()), request.avoid(), request.affinity(), model,
              request.local())
          .map(Future::succeededFuture)
          .orElseGet(() -> refused(Failures.NO_ENGINE, noEngine(request)));
    }

    @Override
    public void release(Reservation reservation) {
      table.release(reservation.id());
    }

    @Override
    public Readiness readiness() {
      return readiness;
    }

    /** Verdicts per model (with the bound they were taken for), each taken at most {@link #ROOM_FRESH_NANOS} ago, and when. */
    private final java.util.concurrent.ConcurrentHashMap<String, RoomVerdict> rooms = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public boolean takes(String iid) {
      return table.state(iid).filter(s -> s == EngineState.SERVING).isPresent();
    }

    @Override
    public Room room(String model, int queueMax) {
      long now = System.nanoTime();
      RoomVerdict verdict = rooms.get(model);
      if (verdict != null && verdict.queueMax() == queueMax && now - verdict.atNanos() < ROOM_FRESH_NANOS) return verdict.room();
      Room room = table.room(model, queueMax);
      // the models asked are those placement knows (a request naming another is refused before): a few keys; bounded anyway
      if (rooms.size() > 1_024) rooms.clear();
      rooms.put(model, new RoomVerdict(room, queueMax, now));
      return room;
    }

    private Future<Reservation> refused(int code, String message) {
      return Future.failedFuture(new ReplyException(ReplyFailure.RECIPIENT_FAILURE, code, message));
    }
  }

  private Future<Void> resync() {
    return shared.entries()
        .onSuccess(entries -> entries.forEach((key, text) -> {
          JsonObject json = ClusterSeal.of(vertx).openText(SharedState.ENGINE_STATE_MAP, key, text);
          if (json != null) apply(json);
        }))
        .mapEmpty();
  }

  /**
   * A reloaded fleet file: removed engines take no new legs (their reservations still release), added ones stay out
   * of placement until the breaker's readmission checks put them in service (or take the cluster's drain,
   * quarantine or ejection of them).
   */
  private void reconfigured(NarwhalConfig cfg) {
    Set<String> known = new HashSet<>();
    table.view().forEach(e -> known.add(e.iid()));
    table.setEngines(cfg.engines());
    long now = System.currentTimeMillis();
    for (EngineConfig e : cfg.engines()) {
      if (known.contains(e.iid())) continue;
      table.setState(e.iid(), EngineState.EJECTED);
      versions.remove(e.iid());
      addedAt.put(e.iid(), now);
    }
    known.stream().filter(iid -> cfg.engines().stream().noneMatch(e -> e.iid().equals(iid))).forEach(iid -> {
      versions.remove(iid);
      addedAt.remove(iid);
    });
    refreshReadiness();
    if (listings != null) listings.arm();
    if (config != null) {
      table.configure(cfg.placement(), cfg.recovery().ejectAfter());
      if (loads != null) {
        loads.track(cfg.engines());
        loads.arm();
      }
    }
  }

  private void reserve(Message<JsonObject> msg) {
    ReserveRequest request;
    try {
      request = ReserveRequest.fromJson(msg.body());
    } catch (RuntimeException e) {
      msg.fail(Failures.BAD_MESSAGE, "malformed reserve request: " + e.getMessage());
      return;
    }
    local.reserve(request).onComplete(ar -> {
      if (ar.succeeded()) {
        msg.reply(ar.result().toJson());
      } else {
        ReplyException refused = (ReplyException) ar.cause();
        msg.fail(refused.failureCode(), refused.getMessage());
      }
    });
  }

  private static String noEngine(ReserveRequest request) {
    if (request.local()) return "NO_ENGINE: no both engine can run the request whole" + forModel(request.model());
    return "NO_ENGINE: no engine can take the " + request.phase().wireName() + " phase" + forModel(request.model());
  }

  private static String forModel(String model) {
    return model == null ? "" : " of model " + model;
  }

  private void streakChanged(JsonObject json) {
    if (json.getValue("iid") instanceof String iid && json.getValue("class") instanceof String c
        && json.getValue("streak") instanceof Number n) {
      table.applyStreak(iid, c, n.intValue());
    }
  }

  private void fleetChanged(Message<JsonObject> msg) {
    JsonObject body = ClusterSeal.of(vertx).open(Addresses.FLEET_CHANGED, msg.body());
    if (body != null) apply(body);
  }

  private void apply(JsonObject body) {
    FleetHoldEvent hold = FleetHoldEvent.fromJson(body);
    if (hold != null && current(SharedState.FLEET_HOLD_KEY, hold.version())) fleetHold = hold.held();
    EngineStateEvent event = EngineStateEvent.fromJson(body);
    if (event != null && !event.leftoverFor(addedAt.getOrDefault(event.iid(), 0L)) && current(event.iid(), event.version())) {
      boolean entering = event.state() == EngineState.SERVING && table.state(event.iid()).orElse(null) != EngineState.SERVING;
      table.setState(event.iid(), event.state());
      if (entering && listings != null) listings.read(event.iid());
    }
    refreshReadiness();
  }

  /**
   * Whether a version is newer than the one already applied under {@code key}; records it if so. One further ahead of
   * this replica's clock than {@link ClockBound} allows is forged and never applied (it would pin the state for good).
   */
  private boolean current(String key, StateVersion version) {
    if (!version.newerThan(versions.getOrDefault(key, StateVersion.NONE))
        || ClockBound.ahead(version.changedMs(), System.currentTimeMillis())) {
      return false;
    }
    versions.put(key, version);
    return true;
  }

  /** An engine's last load reading for {@code /narwhal/state}: figures or error, age, the cluster's legs sent since. */
  private static JsonObject loadView(PlacementTable.EngineView e) {
    if (e.load() == null) return null;
    JsonObject view = e.load().toJson().put("age_ms", Math.max(0, System.currentTimeMillis() - e.load().readAtMs()))
        .put("sent_since", e.sentSinceReading());
    view.remove("iid");
    return view;
  }

  private JsonObject snapshot() {
    JsonArray engines = new JsonArray();
    for (PlacementTable.EngineView e : table.view()) {
      JsonObject engine = new JsonObject().put("iid", e.iid()).put("model", e.model()).put("role", e.role().wireName()).put("state", e.state().wireName())
          .put("reservations", new JsonObject().put("prefill", e.prefillReserved()).put("decode", e.decodeReserved()));
      if (loads != null) engine.put("load", loadView(e));
      engines.add(engine);
    }
    JsonObject snapshot = new JsonObject().put("engines", engines).put("reservations", table.totalReservations());
    if (loads != null) {
      JsonObject placement = new JsonObject().put("policy", table.policy()).put("view", loads.view())
          .put("reader", replica).put("prefixes_known", table.knownPrefixes());
      JsonObject taken = prefixes.view();
      if (taken != null) placement.put("prefix_snapshot", taken);
      snapshot.put("placement", placement);
    }
    Readiness now = readiness;
    if (!now.models().isEmpty()) snapshot.put("models", now.models());
    snapshot.put("ready", now.ready());
    return now.ready() ? snapshot : snapshot.put("reason", now.reason());
  }

  private void refreshReadiness() {
    if (fleetHold) {
      readiness = new Readiness(false, "the fleet is held for a whole-wave restart", new JsonObject());
      return;
    }
    List<String> models = table.models();
    JsonObject perModel = new JsonObject();
    List<String> reasons = new java.util.ArrayList<>();
    for (String model : models) {
      Optional<String> phase = table.unplaceablePhase(model);
      JsonObject line = new JsonObject().put("ready", phase.isEmpty());
      phase.ifPresent(p -> {
        String reason = "no serving engine can take the " + p + " phase" + (models.size() > 1 ? " of model " + model : "");
        line.put("reason", reason);
        reasons.add(reason);
      });
      perModel.put(model, line);
    }
    boolean ready = models.isEmpty() || reasons.size() < models.size();
    readiness = new Readiness(ready, ready ? null : String.join("; ", reasons), perModel);
  }
}
