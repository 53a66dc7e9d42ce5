package narwhal.common.bus;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.Shareable;
import java.util.function.Supplier;

/**
 * This replica's queue and its tenants' use of their quotas ({@code flow}), as the router sees them, published in a
 * local map so the admin command's {@code state} reply (answered by the breaker) shows them beside the engines.
 */
public final class FlowStatus implements Shareable {
  private static final String MAP = "narwhal.flow";
  private static final String KEY = "status";
  private final Supplier<JsonObject> now;

  private FlowStatus(Supplier<JsonObject> now) {
    this.now = now;
  }

  /** Publishes {@code now}, asked each time the status is read (from any thread: it must be thread-safe). */
  public static void publish(Vertx vertx, Supplier<JsonObject> now) {
    vertx.sharedData().getLocalMap(MAP).put(KEY, new FlowStatus(now));
  }

  /** The router's flow status on this node; null when no router runs here. */
  public static JsonObject of(Vertx vertx) {
    Object status = vertx.sharedData().getLocalMap(MAP).get(KEY);
    return status instanceof FlowStatus s ? s.now.get() : null;
  }
}
