package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.Rendezvous;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What each engine serves, as its own {@code GET /v1/models} lists it (docs/operations.md#several-models): its served
 * names and its LoRA adapters ({@code parent} = the base model). Read at start, for an engine that (re)enters service,
 * for engines a reload adds or changes, and every {@code placement.models_refresh_s}; placement sends a request naming
 * an adapter only to engines whose last listing holds it, and {@code /v1/models} is the union of serving engines'
 * listings. A listing that cannot be read keeps the last one (the breaker judges the engine, not this). Each reading is
 * published ({@link Addresses#PLACEMENT_LISTED}): the router learns an engine's context from it, not by reading again.
 * The periodic refresh of an engine is its owner's, the first in its rendezvous order over the live router replicas
 * (as for its load readings): the owner shares what it read on {@link Addresses#PLACEMENT_LISTINGS} (sealed), and the
 * next in the order reads an engine whose listing it heard of no reading for an interval and a timeout more. The
 * reads at start, on entering service and on a reload stay every replica's own: a request must not wait for a peer.
 */
final class ModelListings {
  /** Models an engine's listing holds at most (its base model and LoRA adapters); a longer one is not taken. */
  static final int MAX_CARDS = 4_096;
  private final Vertx vertx;
  /** The {@code /v1/models} reads: a bounded number under way ({@link ReadQueue}). */
  private final ReadQueue queue;
  private final Supplier<NarwhalConfig> config;
  private final PlacementTable table;
  private final Supplier<String> apiKey;
  private final HttpClient http;
  /** Engines whose listing is being read, with the entry each read is of. */
  private final Map<String, EngineConfig> inFlight = new HashMap<>();
  /** The configuration {@link #byIid} indexes (a reload makes a new one). */
  private NarwhalConfig indexed;
  private Map<String, EngineConfig> byIid = Map.of();
  private final String replica;
  /** When each engine's listing was last read, here or by a replica heard from (this replica's clock). */
  private final Map<String, Long> lastRead = new HashMap<>();
  private final MessageConsumer<Object> shared;
  private long timer = -1;

  ModelListings(Vertx vertx, Supplier<NarwhalConfig> config, PlacementTable table, Supplier<String> apiKey, String replica) {
    this.vertx = vertx;
    this.config = config;
    this.table = table;
    this.apiKey = apiKey;
    this.replica = replica;
    this.queue = ReadQueue.forEngineReads(vertx);
    this.http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(1_000));
    this.shared = vertx.eventBus().consumer(Addresses.PLACEMENT_LISTINGS,
        msg -> heard(ClusterSeal.of(vertx).open(Addresses.PLACEMENT_LISTINGS, msg.body())));
  }

  /** (Re)arms the refresh at {@code placement.models_refresh_s} and reads every engine now. */
  void arm() {
    vertx.cancelTimer(timer);
    timer = vertx.setPeriodic(config.get().placement().modelsRefreshMs(), t -> refresh());
    readAll();
  }

  void stop() {
    vertx.cancelTimer(timer);
    shared.unregister();
    http.close();
  }

  /** The periodic refresh: the engines this replica owns, or takes over from an owner heard of no reading. */
  private void refresh() {
    NarwhalConfig cfg = config.get();
    long interval = cfg.placement().modelsRefreshMs();
    long takeover = interval + cfg.engine().healthTimeoutMs();
    long now = System.currentTimeMillis();
    ClusterView view = ClusterView.of(vertx);
    lastRead.keySet().retainAll(cfg.engines().stream().map(EngineConfig::iid).collect(java.util.stream.Collectors.toSet()));
    for (EngineConfig engine : cfg.engines()) {
      int rank = Rendezvous.rank(engine.iid(), view.routers(), view.self());
      long last = lastRead.getOrDefault(engine.iid(), 0L);
      if (rank == 0 || now - last >= interval * 9 / 10 + rank * takeover) read(engine, true);
    }
  }

  void readAll() {
    config.get().engines().forEach(this::read);
  }

  /** Reads one engine's listing now (by iid), unless a reading of it is under way. */
  void read(String iid) {
    EngineConfig engine = engine(iid);
    if (engine != null) read(engine, false);
  }

  /**
   * The configured engine of {@code iid}, or null: an index of the engine list, built once per configuration (every
   * other replica's listing is looked up here; a scan of the list each time cost 1,000 × 1,000 comparisons per refresh
   * at 1,000 engines).
   */
  private EngineConfig engine(String iid) {
    NarwhalConfig cfg = config.get();
    if (cfg != indexed) {
      Map<String, EngineConfig> index = new HashMap<>();
      for (EngineConfig e : cfg.engines()) index.putIfAbsent(e.iid(), e);
      byIid = index;
      indexed = cfg;
    }
    return byIid.get(iid);
  }

  private void read(EngineConfig engine) {
    read(engine, false);
  }

  /** {@code share}: a refresh's reading, published to the other replicas, which then need not read the engine. */
  private void read(EngineConfig engine, boolean share) {
    if (engine.equals(inFlight.get(engine.iid()))) return;
    inFlight.put(engine.iid(), engine);
    queue.submit(() -> fetch(engine)).onSuccess(cards -> {
      // a listing of an entry a reload removed or re-pointed meanwhile is not the listing of what the fleet now lists
      if (!table.lists(engine)) return;
      taken(engine, cards);
      if (share) {
        vertx.eventBus().publish(Addresses.PLACEMENT_LISTINGS, ClusterSeal.of(vertx).seal(Addresses.PLACEMENT_LISTINGS,
            new JsonObject().put("origin", replica).put("iid", engine.iid()).put("url", engine.url()).put("cards", new JsonArray(new ArrayList<>(cards)))));
      }
    }).onComplete(done -> inFlight.remove(engine.iid(), engine));
  }

  private void taken(EngineConfig engine, List<JsonObject> cards) {
    lastRead.put(engine.iid(), System.currentTimeMillis());
    table.applyListing(engine.iid(), cards);
    vertx.eventBus().publish(Addresses.PLACEMENT_LISTED, listed(engine, cards));
  }

  /**
   * Another replica's reading of an engine of this fleet at the same {@code url}: taken as this replica's own, at most
   * {@value #MAX_CARDS} cards. A listing another replica read at another address (it has not applied a reload that
   * re-pointed the engine yet, or its fleet file differs) is not this engine's: taken, the new entry was sent the old
   * address's adapters until the next refresh. A message without a url (an older build) is taken.
   */
  private void heard(JsonObject body) {
    if (body == null || replica.equals(body.getString("origin")) || !(body.getValue("iid") instanceof String iid)
        || !(body.getValue("cards") instanceof JsonArray data) || data.size() > MAX_CARDS) {
      return;
    }
    EngineConfig engine = engine(iid);
    if (engine == null || body.getValue("url") instanceof String url && !url.equals(engine.url())) return;
    taken(engine, cards(data));
  }

  private static List<JsonObject> cards(JsonArray data) {
    List<JsonObject> cards = new ArrayList<>();
    data.forEach(card -> {
      if (card instanceof JsonObject c) cards.add(c);
    });
    return cards;
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

  /**
   * One {@code GET /v1/models}, bounded by {@code engine.health_timeout_s} and {@link EngineGet#MAX_BYTES} (the
   * transfer cut past either): the cards of its {@code data}.
   */
  private Future<List<JsonObject>> fetch(EngineConfig engine) {
    long timeout = config.get().engine().healthTimeoutMs();
    String url = engine.url().endsWith("/") ? engine.url() + "v1/models" : engine.url() + "/v1/models";
    return EngineGet.get(vertx, http, url, "narwhal-placement", apiKey.get(), timeout).compose(body -> {
      Object json;
      try {
        json = Json.decodeValue(body);
      } catch (RuntimeException notJson) {
        return Future.failedFuture(notJson);
      }
      if (!(json instanceof JsonObject o) || !(o.getValue("data") instanceof JsonArray data)) {
        return Future.failedFuture("no data list");
      }
      if (data.size() > MAX_CARDS) return Future.failedFuture(data.size() + " models listed, more than " + MAX_CARDS);
      return Future.succeededFuture(cards(data));
    });
  }
}
