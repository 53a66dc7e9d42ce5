package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

/**
 * Whether placement could place a request now and, when it could not, why; with one line per model
 * ({@code {"ready", "reason"}}). Placement computes it whenever an engine's state, the fleet or the fleet hold
 * changes, so a readiness check reads it without waiting for a busy event loop or a bus round trip.
 */
public record Readiness(boolean ready, String reason, JsonObject models) {
  /** Before placement has run on this node. */
  public static final Readiness NO_PLACEMENT = new Readiness(false, "placement is not running", new JsonObject());

  public Readiness {
    models = models.copy();
  }

  /** Per-model lines, a copy. */
  @Override
  public JsonObject models() {
    return models.copy();
  }
}
