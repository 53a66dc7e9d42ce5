package narwhal.common.bus;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.Shareable;

/**
 * How engine discovery ({@code discovery.kubernetes}) stands on this replica, published in a local map by the launcher
 * and read by the router for {@code /narwhal/state} ({@code discovery}) and {@code narwhal_discovery_stale}.
 */
public interface DiscoveryStatus extends Shareable {
  String MAP = "narwhal.discovery";
  String KEY = "status";

  /** True while the engines discovered may be out of date (the API unreachable or refusing): the last known stay. */
  boolean stale();

  JsonObject toJson();

  DiscoveryStatus OFF = new DiscoveryStatus() {
    @Override
    public boolean stale() {
      return false;
    }

    @Override
    public JsonObject toJson() {
      return new JsonObject().put("enabled", false);
    }
  };

  /** The status published on this node, or {@link #OFF}. */
  static DiscoveryStatus of(Vertx vertx) {
    Object status = vertx.sharedData().getLocalMap(MAP).get(KEY);
    return status instanceof DiscoveryStatus s ? s : OFF;
  }

  static void publish(Vertx vertx, DiscoveryStatus status) {
    vertx.sharedData().getLocalMap(MAP).put(KEY, status);
  }
}
