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
  private final Vertx vertx;

  BreakerJournal(Vertx vertx) {
    this.vertx = vertx;
  }

  @Override
  public void accept(JsonObject event) {
    vertx.eventBus().send(Addresses.JOURNAL_EVENT, event.put("at", Instant.now().toString()), LOCAL);
  }
}
