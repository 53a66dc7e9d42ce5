package narwhal.breaker;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;

import java.time.Instant;
import java.util.function.Consumer;

/**
 * Engine events go to the request journal's writer (the router owns the file) as rows with an {@code event} field,
 * each stamped with the {@code replica} (breaker name) that writes it.
 */
final class BreakerJournal implements Consumer<JsonObject> {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true);
  private static final DeliveryOptions ACKED = new DeliveryOptions().setLocalOnly(true).setSendTimeout(1_000);
  private final Vertx vertx;
  private final String replica;

  BreakerJournal(Vertx vertx) {
    this(vertx, null);
  }

  /** @param replica this replica's breaker name, or null to leave rows unstamped */
  BreakerJournal(Vertx vertx, String replica) {
    this.vertx = vertx;
    this.replica = replica;
  }

  @Override
  public void accept(JsonObject event) {
    vertx.eventBus().send(Addresses.JOURNAL_EVENT, stamped(event), LOCAL);
  }

  private JsonObject stamped(JsonObject event) {
    if (replica != null && !event.containsKey("replica")) event.put("replica", replica);
    return event.put("at", Instant.now().toString());
  }

  /**
   * A row written at the breaker's start, before the router (which owns the journal) listens: sent again every 200 ms
   * until the journal acknowledges it, for up to a minute.
   */
  void acceptOnceOpen(JsonObject event) {
    deliver(stamped(event), 300);
  }

  private void deliver(JsonObject event, int tries) {
    vertx.eventBus().request(Addresses.JOURNAL_EVENT, event, ACKED).onFailure(err -> {
      if (tries > 1) vertx.setTimer(200, t -> deliver(event, tries - 1));
    });
  }
}
