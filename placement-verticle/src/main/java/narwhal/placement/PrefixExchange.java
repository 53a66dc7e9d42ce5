package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.PrefixesPlaced;

/**
 * Keeps the replicas' prefix indexes in agreement (docs/operations.md#placement): every {@link #PERIOD_MS} this
 * replica publishes the prefixes it placed since ({@link PrefixesPlaced} on {@link Addresses#PLACEMENT_PREFIXES}) and
 * learns the other replicas'. A prompt's prefix is then sent where its blocks are cached whichever replica the
 * balancer picks. Fire-and-forget on the event bus: a replica that misses an exchange (frozen, partitioned, starting)
 * places the prefixes it missed by load once and learns them from then on; nothing waits on the shared-state map.
 */
final class PrefixExchange {
  static final long PERIOD_MS = 50;

  private final Vertx vertx;
  private final PlacementTable table;
  private final String replica;
  private MessageConsumer<JsonObject> consumer;
  private long timer = -1;

  PrefixExchange(Vertx vertx, PlacementTable table, String replica) {
    this.vertx = vertx;
    this.table = table;
    this.replica = replica;
  }

  /** Starts publishing and learning; a replica outside a cluster has no one to tell and does neither. */
  Future<Void> start() {
    if (!vertx.isClustered()) return Future.succeededFuture();
    consumer = vertx.eventBus().consumer(Addresses.PLACEMENT_PREFIXES, msg -> {
      PrefixesPlaced placed = PrefixesPlaced.fromJson(msg.body());
      if (placed != null && !replica.equals(placed.origin())) table.learnPrefixes(placed);
    });
    return consumer.completion().onSuccess(v -> timer = vertx.setPeriodic(PERIOD_MS, t -> publish()));
  }

  void stop() {
    vertx.cancelTimer(timer);
    if (consumer != null) consumer.unregister();
  }

  private void publish() {
    PrefixesPlaced placed = table.drainPrefixes(replica);
    if (!placed.placed().isEmpty()) vertx.eventBus().publish(Addresses.PLACEMENT_PREFIXES, placed.toJson());
  }
}
