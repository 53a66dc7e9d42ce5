package narwhal.sim;

import io.vertx.core.json.JsonObject;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The fault rules an engine is currently running with, in the order they were added. A request
 * consumes the first rule that matches its leg; count rules are removed when used up.
 *
 * <p>{@code health_503} is an engine state rather than a per-request fault: adding it makes
 * {@code /health} and {@code /ping} answer 503 at once, until {@link #clear()} or until its
 * {@code seconds} have passed on the engine's clock.
 *
 * <p>Connection faults ({@code accept_no_read}, {@code trickle_headers}, {@code refuse_storm}) are kept apart:
 * each newly accepted inference connection consumes the first of them, before any request on it is read. A
 * {@code refuse_storm} with {@code seconds} refuses every connection accepted until then (engine clock) instead
 * of the next {@code count}. Thread-safe.
 */
public final class FaultPlan {

  private final Clock clock;
  private final List<FaultRule> rules = new ArrayList<>();
  private FaultRule health;
  private Instant healthUntil;
  private final List<FaultRule> connectionRules = new ArrayList<>();
  private FaultRule storm;
  private Instant stormUntil;

  FaultPlan(Clock clock) {
    this.clock = clock;
  }

  public synchronized FaultPlan add(FaultRule rule) {
    FaultRule copy = rule.copy();
    if (copy.type() == InjectedFault.HEALTH_503) {
      activateHealth(copy);
    } else if (copy.type() == InjectedFault.REFUSE_STORM && copy.hasParam("seconds")) {
      storm = copy;
      stormUntil = clock.instant().plusMillis(Math.round(copy.doubleParam("seconds", 0) * 1000));
    } else if (copy.type().connectionLevel()) {
      connectionRules.add(copy);
    } else {
      rules.add(copy);
    }
    return this;
  }

  /** Adds a rule given in JSON form; throws {@link IllegalArgumentException} when it is invalid. */
  public FaultPlan add(JsonObject rule) {
    return add(new FaultRule(rule));
  }

  /** Removes every rule and ends an active {@code health_503}. */
  public synchronized FaultPlan clear() {
    rules.clear();
    connectionRules.clear();
    storm = null;
    stormUntil = null;
    health = null;
    healthUntil = null;
    return this;
  }

  /** Snapshot of the active rules (with remaining counts), including an active {@code health_503}. */
  public synchronized List<FaultRule> list() {
    List<FaultRule> out = new ArrayList<>();
    if (healthDown()) {
      out.add(health.copy());
    }
    if (stormActive()) {
      out.add(storm.copy());
    }
    connectionRules.forEach(r -> out.add(r.copy()));
    rules.forEach(r -> out.add(r.copy()));
    return out;
  }

  synchronized void activateHealth(FaultRule rule) {
    health = rule;
    healthUntil = rule.hasParam("seconds")
      ? clock.instant().plusMillis(Math.round(rule.doubleParam("seconds", 0) * 1000))
      : null;
  }

  synchronized boolean healthDown() {
    if (health != null && healthUntil != null && !clock.instant().isBefore(healthUntil)) {
      health = null;
      healthUntil = null;
    }
    return health != null;
  }

  private boolean stormActive() {
    if (storm != null && !clock.instant().isBefore(stormUntil)) {
      storm = null;
      stormUntil = null;
    }
    return storm != null;
  }

  /** Picks and consumes the connection fault a newly accepted connection gets, or null. */
  synchronized FaultRule takeConnection() {
    if (stormActive()) {
      return storm.copy();
    }
    for (int i = 0; i < connectionRules.size(); i++) {
      FaultRule rule = connectionRules.get(i);
      Double p = rule.probability();
      if (p != null && ThreadLocalRandom.current().nextDouble() >= p) {
        continue;
      }
      FaultRule applied = rule.copy();
      if (!rule.consume()) {
        connectionRules.remove(i);
      }
      return applied;
    }
    return null;
  }

  /** Picks and consumes the first rule that applies to a request of this phase naming {@code model}, or null. */
  synchronized FaultRule take(String phase, boolean hasHandoff, String model) {
    for (int i = 0; i < rules.size(); i++) {
      FaultRule rule = rules.get(i);
      if (!rule.matchesPhase(phase) || !rule.matchesModel(model) || !rule.type().appliesTo(phase, hasHandoff)) {
        continue;
      }
      Double p = rule.probability();
      if (p != null && ThreadLocalRandom.current().nextDouble() >= p) {
        continue;
      }
      FaultRule applied = rule.copy();
      if (!rule.consume()) {
        rules.remove(i);
      }
      return applied;
    }
    return null;
  }
}
