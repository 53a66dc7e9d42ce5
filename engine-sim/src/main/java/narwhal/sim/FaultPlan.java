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
 * {@code seconds} have passed on the engine's clock. Thread-safe.
 */
public final class FaultPlan {

  private final Clock clock;
  private final List<FaultRule> rules = new ArrayList<>();
  private FaultRule health;
  private Instant healthUntil;

  FaultPlan(Clock clock) {
    this.clock = clock;
  }

  public synchronized FaultPlan add(FaultRule rule) {
    FaultRule copy = rule.copy();
    if (copy.type() == InjectedFault.HEALTH_503) {
      activateHealth(copy);
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
