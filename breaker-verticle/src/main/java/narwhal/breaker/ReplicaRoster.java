package narwhal.breaker;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterView;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.SharedSettings;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * The router replicas of the cluster and whether the settings they must share agree
 * (docs/operations.md#what-the-cluster-remembers). Every replica writes its entry — its breaker's name, its cluster
 * address, the {@link SharedSettings} digest of its configuration and its {@code recovery.eject_after} and
 * {@code recovery.liveness_misses} — to the shared map {@value SharedBreakerState#REPLICAS} with a time to live, every
 * resync interval and at once after a hot reload; a replica that stops removes its entry, a killed one's runs out.
 *
 * <p>Every replica reads the entries of the router members it sees and compares each with the oldest member's: the
 * keys that differ are the cluster's config drift ({@code config_drift} in the breaker's state, the
 * {@code narwhal_config_drift*} gauges, a warning in the log at start, on a reload and whenever the drift changes),
 * and the oldest member's two settings judge the failure streaks the cluster shares, on every replica
 * ({@link BreakerBook#judgeStreaksBy}). Each replica answers its own address with its view, so an admin reply gathers
 * every replica's view, and the entries name the replicas that list an engine, so an admin command about an engine
 * reaches a replica that lists it.
 */
final class ReplicaRoster implements AdminHandler.Peers {
  private static final Logger LOG = Logger.getLogger(ReplicaRoster.class.getName());
  private static final long VIEW_TIMEOUT_MS = 2_000;
  private static final long MIN_TTL_MS = 10_000;

  private final Vertx vertx;
  private final SharedBreakerState shared;
  private final BreakerBook book;
  private final String origin;
  private final Supplier<NarwhalConfig> config;
  private volatile List<JsonObject> live = List.of();
  private volatile JsonObject drift = new JsonObject().put("drifted", false);
  private volatile Map<String, Integer> replicasOff = Map.of();
  private String reported = "[]";
  private long intervalMs;
  private Cadence refreshes;
  private long ttlMs = MIN_TTL_MS;
  private boolean refreshing;
  /** The configuration {@link #digest} was computed from (a reload makes a new one). */
  private NarwhalConfig digested;
  private JsonObject digest;

  ReplicaRoster(Vertx vertx, SharedBreakerState shared, BreakerBook book, String origin, Supplier<NarwhalConfig> config,
                MeterRegistry registry) {
    this.vertx = vertx;
    this.shared = shared;
    this.book = book;
    this.origin = origin;
    this.config = config;
    Gauge.builder("narwhal.config.drift", this, r -> r.drift.getBoolean("drifted", false) ? 1 : 0)
        .description("1 while a replica's shared settings (recovery.*, serving.max_attempts, placement.policy/session_header/prefix_block_chars/prefix_blocks, the engine list) differ from the oldest replica's")
        .register(registry);
    for (String key : SharedSettings.GROUPS) {
      Gauge.builder("narwhal.config.drift.replicas", this, r -> r.replicasOff.getOrDefault(key, 0))
          .description("replicas whose setting differs from the oldest replica's, by key (every engine of the list under engines)")
          .tag("key", key).register(registry);
    }
  }

  /** The address a replica answers with its breaker view (request-reply, cluster-wide). */
  static String viewAddress(String replica) {
    return "narwhal.breaker.view." + replica;
  }

  /** The address a replica serves admin commands on for itself alone (a command forwarded by another replica). */
  static String adminAddress(String replica) {
    return Addresses.ADMIN + "." + replica;
  }

  /** Publishes this replica's entry and compares; {@code occasion} ("start", "reload") says why when not a periodic refresh. */
  Future<Void> refresh(String occasion) {
    if (refreshing && occasion == null) return Future.succeededFuture();
    refreshing = true;
    JsonObject mine = own();
    return shared.putReplica(origin, mine, ttlMs).compose(v -> shared.replicas())
        .map(entries -> {
          compare(liveEntries(entries, mine), occasion);
          return (Void) null;
        })
        .recover(err -> {
          // the shared state does not answer: the replicas last read stand, with this one's entry as it is now
          List<JsonObject> kept = new ArrayList<>(live);
          kept.replaceAll(e -> origin.equals(e.getString("replica")) ? mine : e);
          if (!kept.contains(mine)) kept.add(mine);
          compare(kept, occasion);
          return Future.succeededFuture();
        })
        .eventually(() -> {
          refreshing = false;
          return Future.succeededFuture();
        });
  }

  /** Arms the refresh every {@code intervalMs}; armed again (a reload), it keeps its count and takes the new interval. */
  void arm(long intervalMs) {
    ttlMs = Math.max(MIN_TTL_MS, 5 * intervalMs);
    this.intervalMs = intervalMs;
    if (refreshes == null) refreshes = new Cadence(vertx, () -> this.intervalMs, () -> refresh(null));
    refreshes.arm();
  }

  /** Stops refreshing and removes this replica's entry (a graceful stop: the others stop counting it at once). */
  Future<Void> stop() {
    if (refreshes != null) refreshes.stop();
    return shared.removeReplica(origin).otherwiseEmpty();
  }

  /** {@code drifted}, the {@code reference} (the oldest replica), the {@code replicas} that differ with their keys, and the streak rule in force. */
  JsonObject drift() {
    return drift.copy();
  }

  /** The replicas this one counts, oldest first: {@code replica}, {@code member}. */
  JsonArray replicas() {
    JsonArray out = new JsonArray();
    live.forEach(e -> out.add(new JsonObject().put("replica", e.getString("replica")).put("member", e.getString("member"))));
    return out;
  }

  private JsonObject own() {
    NarwhalConfig cfg = config.get();
    if (cfg != digested) {
      // the digest hashes the engine list among the rest: once per configuration, not once per refresh (every second)
      JsonObject fresh = new JsonObject();
      SharedSettings.digest(cfg).forEach(fresh::put);
      digest = fresh;
      digested = cfg;
    }
    return new JsonObject().put("replica", origin).put("member", ClusterView.of(vertx).self()).put("digest", digest.copy())
        .put("eject_after", cfg.recovery().ejectAfter()).put("liveness_misses", cfg.recovery().livenessMisses())
        .put("at", System.currentTimeMillis());
  }

  /** The entries of the router members this replica sees, the newest per member, oldest member first; its own always current. */
  private List<JsonObject> liveEntries(List<JsonObject> entries, JsonObject mine) {
    ClusterView view = ClusterView.of(vertx);
    Map<String, JsonObject> byMember = new LinkedHashMap<>();
    view.routers().forEach(m -> byMember.put(m, null));
    for (JsonObject e : entries) {
      String member = e.getString("member");
      if (member == null || !byMember.containsKey(member)) continue;
      JsonObject held = byMember.get(member);
      if (held == null || e.getLong("at", 0L) > held.getLong("at", 0L)) byMember.put(member, e);
    }
    byMember.put(mine.getString("member"), mine);
    return byMember.values().stream().filter(Objects::nonNull).toList();
  }

  private void compare(List<JsonObject> entries, String occasion) {
    live = List.copyOf(entries);
    JsonObject reference = entries.get(0);
    Map<String, String> ref = digestOf(reference);
    JsonArray differ = new JsonArray();
    Map<String, Integer> off = new HashMap<>();
    for (JsonObject e : entries) {
      if (e == reference) continue;
      Set<String> keys = SharedSettings.differing(ref, digestOf(e));
      if (keys.isEmpty()) continue;
      differ.add(new JsonObject().put("replica", e.getString("replica")).put("member", e.getString("member"))
          .put("keys", new JsonArray(List.copyOf(keys))));
      keys.stream().map(SharedSettings::group).distinct().forEach(g -> off.merge(g, 1, Integer::sum));
    }
    boolean mineIsReference = origin.equals(reference.getString("replica"));
    book.judgeStreaksBy(mineIsReference ? 0 : reference.getInteger("eject_after", 0),
        mineIsReference ? 0 : reference.getInteger("liveness_misses", 0));
    replicasOff = Map.copyOf(off);
    drift = new JsonObject().put("drifted", !differ.isEmpty()).put("reference", reference.getString("member"))
        .put("replicas", differ).put("streaks_judged_by", new JsonObject().put("member", reference.getString("member"))
            .put("eject_after", book.ejectAfter()).put("liveness_misses", book.livenessMisses()));
    report(differ, reference, occasion);
  }

  private void report(JsonArray differ, JsonObject reference, String occasion) {
    String signature = differ.encode();
    boolean changed = !signature.equals(reported);
    reported = signature;
    if (!differ.isEmpty() && (changed || occasion != null)) {
      String who = differ.stream().map(JsonObject.class::cast).map(d -> "replica " + d.getString("member") + " (" + d.getString("replica")
          + ") on " + String.join(", ", d.getJsonArray("keys").stream().map(String::valueOf).toList())).collect(Collectors.joining("; "));
      LOG.warning("config drift" + (occasion == null ? "" : " (at " + occasion + ")") + ": settings the replicas must share differ from "
          + "the oldest replica's (" + reference.getString("member") + "): " + who + "; the shared failure streaks are judged by "
          + "the oldest replica's recovery.eject_after = " + book.ejectAfter() + " and recovery.liveness_misses = "
          + book.livenessMisses() + " on every replica");
    } else if (differ.isEmpty() && changed) {
      LOG.info("config drift over: every replica's shared settings match the oldest replica's (" + reference.getString("member") + ")");
    }
  }

  private static Map<String, String> digestOf(JsonObject entry) {
    Map<String, String> out = new TreeMap<>();
    entry.getJsonObject("digest", new JsonObject()).forEach(kv -> out.put(kv.getKey(), String.valueOf(kv.getValue())));
    return out;
  }

  /** The entries of the replicas now, read afresh (the last ones read when the shared state does not answer). */
  private Future<List<JsonObject>> current() {
    JsonObject mine = own();
    return shared.replicas().map(entries -> liveEntries(entries, mine)).otherwise(err -> live.isEmpty() ? List.of(mine) : live);
  }

  @Override
  public Future<JsonObject> gathered(JsonObject ownView) {
    return current().compose(entries -> {
      List<Future<JsonObject>> views = new ArrayList<>();
      for (JsonObject e : entries) {
        String replica = e.getString("replica");
        if (origin.equals(replica)) {
          views.add(Future.succeededFuture(summary(ownView, e)));
        } else {
          views.add(vertx.eventBus().<JsonObject>request(viewAddress(replica), new JsonObject(),
                  new DeliveryOptions().setSendTimeout(VIEW_TIMEOUT_MS))
              .map(reply -> summary(reply.body(), e))
              .otherwise(err -> new JsonObject().put("replica", replica).put("member", e.getString("member")).put("answered", false)));
        }
      }
      return Future.all(views).map(v -> {
        JsonArray all = new JsonArray();
        views.forEach(f -> all.add(f.result()));
        return ownView.copy().put("replicas", all);
      });
    });
  }

  private static JsonObject summary(JsonObject view, JsonObject entry) {
    JsonArray engines = new JsonArray();
    view.getJsonArray("engines", new JsonArray()).stream().map(JsonObject.class::cast)
        .forEach(e -> engines.add(new JsonObject().put("iid", e.getString("iid")).put("state", e.getString("state"))
            .put("cause", e.getString("cause"))));
    return new JsonObject().put("replica", entry.getString("replica")).put("member", entry.getString("member")).put("answered", true)
        .put("fleet_hold", view.getBoolean("fleet_hold", false)).put("engines", engines);
  }

  @Override
  public Future<String> listing(String iid) {
    String key = SharedSettings.ENGINES + "." + iid;
    return current().map(entries -> entries.stream().filter(e -> !origin.equals(e.getString("replica")))
        .filter(e -> e.getJsonObject("digest", new JsonObject()).containsKey(key))
        .map(e -> adminAddress(e.getString("replica"))).findFirst().orElse(null));
  }
}
