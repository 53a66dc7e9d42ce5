package narwhal.launcher;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BinaryOperator;
import java.util.function.Function;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * Make before break for engines a reload re-points (docs/operations.md#replacing-and-scaling-engines): an engine whose
 * {@code url}, {@code role}, {@code attestation_url}, {@code kv_side_channel} or model changed keeps its old entry, and
 * so its old address, in the applied configuration while the breaker's readmission checks run on the new one, at once
 * and then every {@link #RETRY_MS}; when they pass, the new entry is swapped in and keeps serving without a gap. A
 * reload that changes the entry again checks the newest; one that puts the old entry back, or removes the engine,
 * forgets the candidate. Added and removed engines are not staged: an added one is checked by the breaker before it
 * serves, a removed one gets no new leg at once.
 */
final class RepointedEngines implements BinaryOperator<NarwhalConfig> {
  private static final Logger LOG = Logger.getLogger(RepointedEngines.class.getName());
  /** How often the checks of a candidate that failed them run again. */
  static final long RETRY_MS = 1_000;

  private final Vertx vertx;
  private final AtomicReference<NarwhalConfig> config;
  /** iid → the entry waiting for its checks, guarded by {@link #config}. */
  private final Map<String, EngineConfig> pending = new HashMap<>();
  private final Set<EngineConfig> failedOnce = new HashSet<>();

  RepointedEngines(Vertx vertx, AtomicReference<NarwhalConfig> config) {
    this.vertx = vertx;
    this.config = config;
  }

  /** The configuration to apply for {@code next}: each re-pointed engine as it was, its new entry checked. */
  @Override
  public NarwhalConfig apply(NarwhalConfig previous, NarwhalConfig next) {
    synchronized (config) {
      Map<String, EngineConfig> before = previous.engines().stream()
          .collect(Collectors.toMap(EngineConfig::iid, Function.identity()));
      List<EngineConfig> applied = new ArrayList<>();
      Set<String> staged = new HashSet<>();
      List<EngineConfig> fresh = new ArrayList<>();
      for (EngineConfig engine : next.engines()) {
        EngineConfig old = before.get(engine.iid());
        if (old == null || old.equals(engine)) {
          applied.add(engine);
          continue;
        }
        applied.add(old);
        staged.add(engine.iid());
        if (!engine.equals(pending.put(engine.iid(), engine))) fresh.add(engine);
      }
      pending.keySet().retainAll(staged);
      failedOnce.retainAll(pending.values());
      fresh.forEach(this::check);
      return next.withEngines(applied);
    }
  }

  /** The new entries still waiting for their checks (for the replica's state). */
  List<EngineConfig> pending() {
    synchronized (config) {
      return List.copyOf(pending.values());
    }
  }

  private void check(EngineConfig candidate) {
    vertx.eventBus().<JsonObject>request(Addresses.CANDIDATE_CHECK, candidate.toJson(),
            new DeliveryOptions().setLocalOnly(true).setSendTimeout(config.get().engine().lifecycleCheckBoundMs()))
        .onComplete(ar -> {
          boolean passed = ar.succeeded() && ar.result().body().getBoolean("passed", false);
          String why = ar.succeeded() ? ar.result().body().getString("why", "") : String.valueOf(ar.cause().getMessage());
          if (passed) {
            swap(candidate);
          } else {
            retry(candidate, why);
          }
        });
  }

  private void retry(EngineConfig candidate, String why) {
    synchronized (config) {
      if (!candidate.equals(pending.get(candidate.iid()))) return;
      if (failedOnce.add(candidate)) {
        LOG.warning(() -> "engine " + candidate.iid() + ": its new entry (" + candidate.url() + ") fails its checks (" + why
            + "); the old one keeps serving, checked again every " + RETRY_MS + " ms until it passes");
      }
    }
    vertx.setTimer(RETRY_MS, t -> {
      boolean still;
      synchronized (config) {
        still = candidate.equals(pending.get(candidate.iid()));
      }
      if (still) check(candidate);
    });
  }

  private void swap(EngineConfig candidate) {
    NarwhalConfig swapped;
    synchronized (config) {
      if (!candidate.equals(pending.get(candidate.iid()))) return;
      pending.remove(candidate.iid());
      failedOnce.remove(candidate);
      NarwhalConfig now = config.get();
      swapped = now.withEngines(now.engines().stream().map(e -> e.iid().equals(candidate.iid()) ? candidate : e).toList());
      config.set(swapped);
    }
    LOG.info(() -> "engine " + candidate.iid() + " re-pointed to " + candidate.url() + ": its checks passed");
    vertx.eventBus().publish(Addresses.ENGINES_REPOINTED, new JsonObject().put("iids", new JsonArray().add(candidate.iid())),
        new DeliveryOptions().setLocalOnly(true));
    vertx.eventBus().publish(Addresses.CONFIG_CHANGED, swapped.toJson(), new DeliveryOptions().setLocalOnly(true));
  }
}
