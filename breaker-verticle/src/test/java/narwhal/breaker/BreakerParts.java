package narwhal.breaker;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.SharedData;
import narwhal.common.bus.EngineState;
import narwhal.common.config.NarwhalConfig;
import narwhal.sim.SimEngineOptions;
import narwhal.sim.SimFleet;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * The breaker's parts built as {@link BreakerVerticle} builds them, on a test's Vert.x and event bus, but not wired to
 * each other's consumers or timers: a test calls the one part it is about and watches the bus, the book and the shared
 * state. The clock is the test's; so are the engines, real simulated ones or addresses nothing answers on.
 */
final class BreakerParts {
  static final String MODEL = SimEngineOptions.DEFAULT_MODEL;
  static final String ORIGIN = "breaker-test";

  final Vertx vertx;
  final NarwhalConfig config;
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final BreakerJournal journal;
  final BreakerBook book;
  final BreakerMetrics metrics;
  final SharedStateGuard guard;
  final SharedBreakerState shared;
  final ClusterSync sync;
  final OutcomeIntake intake;
  final Prober prober;
  final LivenessSweep liveness;
  final ProbeScheduler probes;
  final AdminHandler admin;

  private BreakerParts(Vertx vertx, NarwhalConfig config, LongSupplier clockMs, String token, UnaryOperator<SharedData> sharedData) {
    this.vertx = vertx;
    this.config = config;
    journal = new BreakerJournal(vertx);
    book = new BreakerBook(config.engines(), config.recovery(), config.engineContract() != null, clockMs, ORIGIN);
    metrics = new BreakerMetrics(registry, book);
    config.engines().forEach(e -> metrics.track(e.iid()));
    guard = new SharedStateGuard(vertx, config.cluster().sharedState(), registry, journal);
    shared = new SharedBreakerState(sharedData.apply(vertx.sharedData()), guard);
    sync = new ClusterSync(vertx, book, shared, guard, ORIGIN, clockMs,
        new DecisionFile(vertx, config.cluster().decisionsPath(), ORIGIN), journal);
    intake = new OutcomeIntake(book, sync, metrics, journal);
    prober = new Prober(vertx, () -> config, name -> null);
    liveness = new LivenessSweep(vertx, () -> config, book, prober, sync, intake, metrics, guard, ORIGIN, System::currentTimeMillis);
    probes = new ProbeScheduler(vertx, () -> config, book, prober, shared, sync, intake, liveness, metrics, journal);
    admin = new AdminHandler(vertx, book, intake, probes, metrics, () -> token, () -> new JsonObject()
        .put("engines", book.snapshot()).put("fleet_hold", book.fleetHold()).put("shared_state", guard.state()), shared);
  }

  /** Parts over {@code engines} ({@code iid, url, role}), with {@code overrides} merged into the fleet JSON's sections. */
  static BreakerParts of(Vertx vertx, List<String[]> engines, JsonObject overrides, LongSupplier clockMs, String token) {
    return of(vertx, engines, overrides, clockMs, token, UnaryOperator.identity());
  }

  /** As above, the breaker's shared state going through {@code sharedData} (a test's wrapper of the real one). */
  static BreakerParts of(Vertx vertx, List<String[]> engines, JsonObject overrides, LongSupplier clockMs, String token,
                         UnaryOperator<SharedData> sharedData) {
    JsonArray fleet = new JsonArray();
    engines.forEach(e -> fleet.add(new JsonObject().put("iid", e[0]).put("url", e[1]).put("role", e[2])));
    JsonObject json = new JsonObject().put("model", MODEL).put("engines", fleet)
        .put("engine", new JsonObject().put("first_token_timeout_s", 5).put("decode_read_timeout_s", 5).put("health_timeout_s", 2))
        .put("recovery", new JsonObject().put("eject_after", 1).put("readmit_every", 100_000).put("liveness_every", 100_000));
    overrides.forEach(entry -> {
      Object base = json.getValue(entry.getKey());
      if (base instanceof JsonObject section && entry.getValue() instanceof JsonObject extra) section.mergeIn(extra);
      else json.put(entry.getKey(), entry.getValue());
    });
    return new BreakerParts(vertx, NarwhalConfig.fromJson(json), clockMs, token, sharedData);
  }

  /** Engines nothing answers on ({@code "P0:prefill"}, …): for parts that never reach an engine. */
  static BreakerParts unreachable(Vertx vertx, List<String> specs, JsonObject overrides, AtomicLong now, String token) {
    return of(vertx, unreachable(specs), overrides, now::get, token);
  }

  static List<String[]> unreachable(List<String> specs) {
    return specs.stream().map(s -> s.split(":")).map(p -> new String[] {p[0], "http://127.0.0.1:9/" + p[0], p[1]}).toList();
  }

  /** Real simulated engines, one per spec ({@code "P0:prefill"}, …), named by their iid. */
  static Future<SimFleet> sims(Vertx vertx, List<String> specs) {
    return SimFleet.start(vertx, specs.stream().map(s -> s.split(":"))
        .map(p -> new SimEngineOptions().setName(p[0]).setRole(p[1]).setPort(0).setSideChannelPort(0)).toList());
  }

  /** Parts over the engines of {@code fleet}. */
  static BreakerParts over(Vertx vertx, SimFleet fleet, JsonObject overrides, LongSupplier clockMs, String token) {
    return of(vertx, fleet.engines().stream().map(e -> new String[] {e.name(), e.url(), e.options().getRole()}).toList(),
        overrides, clockMs, token);
  }

  EngineState state(String iid) {
    return book.state(iid).orElseThrow();
  }

  JsonObject engine(String iid) {
    return book.snapshot().stream().map(JsonObject.class::cast).filter(e -> iid.equals(e.getString("iid"))).findFirst().orElseThrow();
  }

  /** A counter's value by name and tags ({@code "iid", "D0", "cause", "connection"}). */
  double count(String name, String... tags) {
    var counter = registry.find(name).tags(tags).counter();
    return counter == null ? -1 : counter.count();
  }

  /**
   * Completes once {@code condition} holds, checked now and after every 10 ms; for what a part does in the background
   * without an event to await (a test's timeout fails it if it never holds).
   */
  static Future<Void> until(Vertx vertx, java.util.function.Supplier<Future<Boolean>> condition) {
    io.vertx.core.Promise<Void> held = io.vertx.core.Promise.promise();
    check(vertx, condition, held);
    return held.future();
  }

  private static void check(Vertx vertx, java.util.function.Supplier<Future<Boolean>> condition, io.vertx.core.Promise<Void> held) {
    condition.get().onComplete(ar -> {
      if (ar.succeeded() && ar.result()) held.complete();
      else vertx.setTimer(10, t -> check(vertx, condition, held));
    });
  }

  Future<Void> close() {
    probes.stop();
    sync.stop();
    guard.close();
    return prober.close();
  }
}
