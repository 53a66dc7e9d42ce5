package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import narwhal.common.bus.Addresses;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * What each engine serves, as its own {@code GET /v1/models} lists it (docs/operations.md#several-models): its served
 * names and its LoRA adapters ({@code parent} = the base model). Read at start, for an engine that (re)enters service,
 * for engines a reload adds or changes, and every {@code placement.models_refresh_s}; placement sends a request naming
 * an adapter only to engines whose last listing holds it, and {@code /v1/models} is the union of serving engines'
 * listings. A listing that cannot be read keeps the last one (the breaker judges the engine, not this). Each reading is
 * published ({@link Addresses#PLACEMENT_LISTED}): the router learns an engine's context from it, not by reading again.
 */
final class ModelListings {
  private final Vertx vertx;
  private final Supplier<NarwhalConfig> config;
  private final PlacementTable table;
  private final Supplier<String> apiKey;
  private final WebClient web;
  private final Set<String> inFlight = new HashSet<>();
  private long timer = -1;

  ModelListings(Vertx vertx, Supplier<NarwhalConfig> config, PlacementTable table, Supplier<String> apiKey) {
    this.vertx = vertx;
    this.config = config;
    this.table = table;
    this.apiKey = apiKey;
    this.web = WebClient.create(vertx, new WebClientOptions().setUserAgent("narwhal-placement").setFollowRedirects(false)
        .setConnectTimeout(1_000));
  }

  /** (Re)arms the refresh at {@code placement.models_refresh_s} and reads every engine now. */
  void arm() {
    vertx.cancelTimer(timer);
    timer = vertx.setPeriodic(config.get().placement().modelsRefreshMs(), t -> readAll());
    readAll();
  }

  void stop() {
    vertx.cancelTimer(timer);
    web.close();
  }

  void readAll() {
    config.get().engines().forEach(this::read);
  }

  /** Reads one engine's listing now (by iid), unless a reading of it is under way. */
  void read(String iid) {
    config.get().engine(iid).ifPresent(this::read);
  }

  private void read(EngineConfig engine) {
    if (!inFlight.add(engine.iid())) return;
    fetch(engine).onSuccess(cards -> {
      table.applyListing(engine.iid(), cards);
      vertx.eventBus().publish(Addresses.PLACEMENT_LISTED, listed(engine, cards));
    }).onComplete(done -> inFlight.remove(engine.iid()));
  }

  /** What a reading tells the router: the {@code max_model_len} of the card of the engine's own model, if it has one. */
  private JsonObject listed(EngineConfig engine, List<JsonObject> cards) {
    String model = engine.model().isEmpty() ? config.get().model() : engine.model();
    JsonObject out = new JsonObject().put("iid", engine.iid());
    cards.stream().filter(card -> model.equals(card.getValue("id"))).findFirst()
        .filter(card -> card.getValue("max_model_len") instanceof Number n && n.intValue() > 0)
        .ifPresent(card -> out.put("max_model_len", ((Number) card.getValue("max_model_len")).intValue()));
    return out;
  }

  /** One {@code GET /v1/models}, bounded by {@code engine.health_timeout_s}: the cards of its {@code data}. */
  private Future<List<JsonObject>> fetch(EngineConfig engine) {
    long timeout = config.get().engine().healthTimeoutMs();
    String url = engine.url().endsWith("/") ? engine.url() + "v1/models" : engine.url() + "/v1/models";
    HttpRequest<Buffer> request = web.getAbs(url).timeout(timeout);
    String key = apiKey.get();
    if (!key.isEmpty()) request.bearerTokenAuthentication(key);
    return request.send().timeout(timeout, TimeUnit.MILLISECONDS).compose(resp -> {
      if (resp.statusCode() != 200 || resp.body() == null) return Future.failedFuture("HTTP " + resp.statusCode());
      Object json;
      try {
        json = Json.decodeValue(resp.body());
      } catch (RuntimeException notJson) {
        return Future.failedFuture(notJson);
      }
      if (!(json instanceof JsonObject o) || !(o.getValue("data") instanceof JsonArray data)) {
        return Future.failedFuture("no data list");
      }
      List<JsonObject> cards = new ArrayList<>();
      data.forEach(card -> {
        if (card instanceof JsonObject c) cards.add(c);
      });
      return Future.succeededFuture(cards);
    });
  }
}
