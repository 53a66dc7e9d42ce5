package narwhal.breaker;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;

import java.time.Instant;
import java.util.function.Consumer;

/** Engine events go to the request journal's writer (the router owns the file) as rows with an {@code event} field. */
final class BreakerJournal implements Consumer<JsonObject> {
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setLocalOnly(true);
  private static final DeliveryOptions ACKED = new DeliveryOptions().setLocalOnly(true).setSendTimeout(1_000);
  private final Vertx vertx;

  BreakerJournal(Vertx vertx) {
    this.vertx = vertx;
  }

  @Override
  public void accept(JsonObject event) {
    vertx.eventBus().send(Addresses.JOURNAL_EVENT, event.put("at", Instant.now().toString()), LOCAL);
  }

  /**
   * A row written at the breaker's start, before the router (which owns the journal) listens: sent again every 200 ms
   * until the journal acknowledges it, for up to a minute.
   */
  void acceptOnceOpen(JsonObject event) {
    event.put("at", Instant.now().toString());
    deliver(event, 300);
  }

  private void deliver(JsonObject event, int tries) {
    vertx.eventBus().request(Addresses.JOURNAL_EVENT, event, ACKED).onFailure(err -> {
      if (tries > 1) vertx.setTimer(200, t -> deliver(event, tries - 1));
    });
  }
}
