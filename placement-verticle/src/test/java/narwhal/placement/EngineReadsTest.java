package narwhal.placement;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.Rendezvous;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.fault.Phase;
import narwhal.sim.SimEngineOptions;
import narwhal.sim.SimFleet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

import static narwhal.placement.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The two parts of placement that read engines, each alone against real simulated engines on a real Vert.x:
 * {@link LoadReadings} (one reading of each stale engine for the whole cluster, through the shared map; a failed
 * reading is a failed load, never an idle one) and {@link ModelListings} (each engine's {@code /v1/models}, adapters
 * included, decides which engines a request naming an adapter may go to).
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class EngineReadsTest {
  private static final String MODEL = SimEngineOptions.DEFAULT_MODEL;
  private static final String REPLICA = "placement-test";

  /** Starts P0 (prefill), D0 and D1 (decode), D1 with a LoRA adapter, and a config over them; runs {@code test} on a context. */
  private static void withEngines(Vertx vertx, VertxTestContext ctx, JsonObject placement, BiConsumer<SimFleet, NarwhalConfig> test) {
    List<SimEngineOptions> options = List.of(
        new SimEngineOptions().setName("P0").setRole("prefill").setPort(0).setSideChannelPort(0),
        new SimEngineOptions().setName("D0").setRole("decode").setPort(0).setSideChannelPort(0),
        new SimEngineOptions().setName("D1").setRole("decode").setPort(0).setSideChannelPort(0)
            .setLoraModules(Map.of("sql-adapter", "/adapters/sql")));
    vertx.runOnContext(v -> SimFleet.start(vertx, options).onComplete(ctx.succeeding(fleet -> {
      JsonArray engines = new JsonArray();
      fleet.engines().forEach(e -> engines.add(new JsonObject().put("iid", e.name()).put("url", e.url()).put("role", e.options().getRole())));
      NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", MODEL).put("engines", engines).put("placement", placement));
      ctx.verify(() -> test.accept(fleet, config));
    })));
  }

  private static PlacementTable table(NarwhalConfig config) {
    PlacementTable table = new PlacementTable(config.engines(), System::currentTimeMillis);
    table.configure(config.placement(), config.recovery().ejectAfter());
    return table;
  }

  private static EngineLoad load(PlacementTable table, String iid) {
    return table.view().stream().filter(v -> v.iid().equals(iid)).findFirst().orElseThrow().load();
  }

  @Test
  void aRoundReadsOnlyTheStaleEnginesAndSharesItsReadingsWithEveryReplica(Vertx vertx, VertxTestContext ctx) {
    withEngines(vertx, ctx, new JsonObject().put("policy", "load").put("metrics_interval_s", 60).put("metrics_timeout_s", 10), (fleet, config) -> {
      PlacementTable table = table(config);
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), () -> config, table, REPLICA, () -> "", registry, () -> { });
      readings.track(config.engines());
      EngineLoad fresh = new EngineLoad("D0", 7, 2, 0.5, System.currentTimeMillis(), "replica-b", null);
      vertx.sharedData().<String, String>getAsyncMap(LoadReadings.LOADS)
          .compose(map -> map.put("D0", fresh.toJson().encode()))
          .compose(v -> {
            readings.arm();
            return until(vertx, () -> table.view().stream().allMatch(e -> e.load() != null));
          })
          .compose(v -> vertx.sharedData().<String, String>getAsyncMap(LoadReadings.LOADS).compose(AsyncMap::entries))
          .onComplete(ctx.succeeding(shared -> ctx.verify(() -> {
            assertEquals(7.0, load(table, "D0").running(), "another replica's fresh reading is taken, not read again");
            assertEquals("replica-b", EngineLoad.fromJson(new JsonObject(shared.get("D0"))).reader());
            assertEquals(0.0, registry.find("narwhal.engine.load.reads").tags("iid", "D0", "outcome", "ok").counter().count());
            for (String iid : List.of("P0", "D1")) {
              assertTrue(load(table, iid).ok(), iid + " read from its /metrics: " + load(table, iid));
              assertEquals(REPLICA, EngineLoad.fromJson(new JsonObject(shared.get(iid))).reader(), "and written back for every replica");
              assertEquals(1.0, registry.find("narwhal.engine.load.reads").tags("iid", iid, "outcome", "ok").counter().count());
            }
            assertEquals("cluster", readings.view());
            readings.stop();
            ctx.completeNow();
          })));
    });
  }

  @Test
  void aSlowEngineDoesNotHoldBackTheRoundsOtherReadings(Vertx vertx, VertxTestContext ctx) {
    // D0 accepts the round's connection and never reads it: its reading ends at metrics_timeout_s. The others' readings
    // reach the shared map (and the other replicas) before that, not after the slowest: held back, they reached the
    // backups after their next round, which read those engines beside their owner.
    withEngines(vertx, ctx, new JsonObject().put("policy", "load").put("metrics_interval_s", 60).put("metrics_timeout_s", 10), (fleet, config) -> {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      PlacementTable table = table(config);
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), () -> config, table, REPLICA, () -> "", registry, () -> { });
      readings.track(config.engines());
      fleet.engine("D0").faults().add(new JsonObject().put("kind", "accept_no_read"));
      readings.arm();
      Supplier<Future<Map<String, String>>> shared = () -> vertx.sharedData().<String, String>getAsyncMap(LoadReadings.LOADS).compose(AsyncMap::entries);
      Promise<Map<String, String>> othersShared = Promise.promise();
      vertx.setPeriodic(0, 10, id -> shared.get().onSuccess(entries -> {
        if (entries.containsKey("P0") && entries.containsKey("D1") && vertx.cancelTimer(id)) othersShared.tryComplete(entries);
      }));
      othersShared.future().onComplete(ctx.succeeding(entries -> ctx.verify(() -> {
        assertFalse(entries.containsKey("D0"), "D0 still unanswered: " + entries.keySet());
        assertEquals(0.0, registry.find("narwhal.engine.load.reads").tags("iid", "D0", "outcome", "failed").counter().count(),
            "the others were shared while D0's reading was still under way");
        readings.stop();
        ctx.completeNow();
      })));
    });
  }

  @Test
  void anIdleEngineIsReadLessOftenAndALegBringsItBackToTheInterval(Vertx vertx, VertxTestContext ctx) {
    // interval 50 ms; idle readings double it up to 0.4 s: 50, 100, 200, 400, 400 ms
    withEngines(vertx, ctx, new JsonObject().put("policy", "load").put("metrics_interval_s", 0.05).put("idle_metrics_interval_s", 0.4),
        (fleet, config) -> {
      PlacementTable table = table(config);
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), () -> config, table, REPLICA, () -> "",
          new SimpleMeterRegistry(), () -> { });
      readings.track(config.engines());
      readings.arm();
      until(vertx, () -> load(table, "D0") != null && load(table, "D0").idleReadings() >= 4)
          .compose(v -> {
            ctx.verify(() -> {
              assertEquals(400, config.placement().readingIntervalMs(load(table, "D0").idleReadings()), "the slowest cadence");
              assertEquals(50, config.placement().readingIntervalMs(0));
            });
            var leg = table.reserve(narwhal.common.fault.Phase.DECODE, java.util.Set.of("D1"), null, null).orElseThrow();
            long placed = System.currentTimeMillis();
            table.release(leg.id());
            // read again at the interval, not 0.4 s later, and no longer idle: a leg was placed since
            return until(vertx, () -> load(table, "D0").readAtMs() > placed).map(placed);
          })
          .onComplete(ctx.succeeding(before -> ctx.verify(() -> {
            EngineLoad after = load(table, "D0");
            assertEquals(0, after.idleReadings(), "a leg since the reading: read at the configured interval again: " + after);
            assertTrue(load(table, "P0").idleReadings() >= 1, "P0 idles on");
            readings.stop();
            ctx.completeNow();
          })));
    });
  }

  @Test
  void anEngineThatDoesNotAnswerIsAFailedReadingNeverAnIdleOne(Vertx vertx, VertxTestContext ctx) {
    withEngines(vertx, ctx, new JsonObject().put("policy", "load").put("metrics_timeout_s", 1), (fleet, config) -> {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), () -> config, table(config), REPLICA, () -> "", registry, () -> { });
      readings.track(config.engines());
      fleet.engine("D0").stopListening()
          .compose(v -> readings.read(config.engine("D0").orElseThrow()))
          .onComplete(ctx.succeeding(reading -> ctx.verify(() -> {
            assertFalse(reading.ok(), "no load is known: " + reading);
            assertTrue(reading.error().startsWith("could not read /metrics"), reading.error());
            assertEquals(1.0, registry.find("narwhal.engine.load.reads").tags("iid", "D0", "outcome", "failed").counter().count());
            readings.stop();
            ctx.completeNow();
          })));
    });
  }

  @Test
  void anAdapterGoesOnlyToTheEnginesWhoseListingHoldsIt(Vertx vertx, VertxTestContext ctx) {
    withEngines(vertx, ctx, new JsonObject(), (fleet, config) -> {
      PlacementTable table = table(config);
      ModelListings listings = new ModelListings(vertx, () -> config, table, () -> "", REPLICA);
      assertFalse(table.knows("sql-adapter"), "nothing is listed before a reading");
      listings.arm();
      until(vertx, () -> table.knows("sql-adapter") && table.servedCards().size() == 2).onComplete(ctx.succeeding(v -> ctx.verify(() -> {
        assertEquals(List.of(MODEL, "sql-adapter"), table.servedCards().stream().map(c -> c.getString("id")).toList());
        assertEquals(MODEL, table.servedCards().get(1).getString("parent"), "the adapter's card names its base model");
        for (int i = 0; i < 4; i++) {
          assertEquals("D1", table.reserve(Phase.DECODE, Set.of(), null, null, "sql-adapter").orElseThrow().iid(),
              "D0 does not list the adapter");
        }
        listings.stop();
        ctx.completeNow();
      })));
    });
  }

  @Test
  void theRefreshIsTheOwnersWhoSharesItAndAQuietOwnersEnginesAreReadByTheNext(Vertx vertx, VertxTestContext ctx) {
    withEngines(vertx, ctx, new JsonObject().put("models_refresh_s", 0.3), (fleet, base) -> {
      // a backup takes over after 0.3 s and health_timeout_s more
      NarwhalConfig config = NarwhalConfig.fromJson(base.toJson().put("engine", base.toJson().getJsonObject("engine").put("health_timeout_s", 2)));
      List<String> members = List.of("10.0.0.1:5701", "10.0.0.2:5701");
      vertx.sharedData().getLocalMap(ClusterView.MAP).put(ClusterView.KEY, view(members.get(0), members));
      Set<String> ownA = new java.util.TreeSet<>();
      Set<String> ownB = new java.util.TreeSet<>();
      config.engines().forEach(e -> (Rendezvous.rank(e.iid(), members, members.get(0)) == 0 ? ownA : ownB).add(e.iid()));
      assertFalse(ownA.isEmpty() || ownB.isEmpty(), "each replica owns engines: " + ownA + ownB);
      Map<String, Integer> sharedByA = new java.util.concurrent.ConcurrentHashMap<>();
      vertx.eventBus().<JsonObject>consumer(Addresses.PLACEMENT_LISTINGS, msg -> {
        if (REPLICA.equals(msg.body().getString("origin"))) sharedByA.merge(msg.body().getString("iid"), 1, Integer::sum);
      });
      // B refreshes its engines and says so, far more often than A would take them over
      long fromB = vertx.setPeriodic(100, t -> ownB.forEach(iid -> vertx.eventBus().publish(Addresses.PLACEMENT_LISTINGS,
          ClusterSeal.of(vertx).seal(Addresses.PLACEMENT_LISTINGS, new JsonObject().put("origin", "placement-b").put("iid", iid)
              .put("cards", new JsonArray().add(new JsonObject().put("id", MODEL)))))));
      ModelListings listings = new ModelListings(vertx, () -> config, table(config), () -> "", REPLICA);
      listings.arm();
      until(vertx, () -> ownA.stream().allMatch(iid -> sharedByA.getOrDefault(iid, 0) >= 3))
          .compose(v -> {
            ctx.verify(() -> ownB.forEach(iid -> assertEquals(0, sharedByA.getOrDefault(iid, 0),
                "three refreshes of A's engines, none of B's while B shares them: " + sharedByA)));
            vertx.cancelTimer(fromB);
            return until(vertx, () -> ownB.stream().allMatch(iid -> sharedByA.getOrDefault(iid, 0) >= 1));
          })
          .onComplete(ctx.succeeding(v -> {
            listings.stop();
            vertx.sharedData().getLocalMap(ClusterView.MAP).remove(ClusterView.KEY);
            ctx.completeNow();
          }));
    });
  }

  @Test
  void aListingAnotherReplicaReadAtAnotherAddressIsNotTaken(Vertx vertx, VertxTestContext ctx) {
    // B has not applied the reload that moved D1 yet (or its fleet file differs): its listing of D1 is of the old
    // address. Taken, A sent requests naming that address's adapter to D1's new one until its next refresh.
    withEngines(vertx, ctx, new JsonObject().put("models_refresh_s", 60), (fleet, config) -> {
      PlacementTable table = table(config);
      ModelListings listings = new ModelListings(vertx, () -> config, table, () -> "", REPLICA);
      listings.arm();
      until(vertx, () -> table.knows("sql-adapter")).compose(v -> {
        BiConsumer<String, JsonObject> fromB = (iid, more) -> vertx.eventBus().publish(Addresses.PLACEMENT_LISTINGS,
            ClusterSeal.of(vertx).seal(Addresses.PLACEMENT_LISTINGS, new JsonObject().put("origin", "placement-b").put("iid", iid)
                .put("cards", new JsonArray().add(new JsonObject().put("id", MODEL)).add(more)).put("url",
                    iid.equals("D1") ? "http://127.0.0.1:1/old-d1" : config.engine(iid).orElseThrow().url())));
        // again and again: A's own first read of D0 may end after a single message and replace its listing
        long fromBAgain = vertx.setPeriodic(0, 50, t -> {
          fromB.accept("D1", new JsonObject().put("id", "old-adapter").put("parent", MODEL));
          fromB.accept("D0", new JsonObject().put("id", "new-adapter").put("parent", MODEL));
        });
        return until(vertx, () -> table.knows("new-adapter")).onComplete(done -> vertx.cancelTimer(fromBAgain));
      }).onComplete(ctx.succeeding(v -> ctx.verify(() -> {
        assertFalse(table.knows("old-adapter"), "the old address's listing is not D1's");
        assertTrue(table.knows("sql-adapter"), "D1 keeps its own listing");
        listings.stop();
        ctx.completeNow();
      })));
    });
  }

  private static ClusterView view(String self, List<String> members) {
    return new ClusterView() {
      @Override
      public int membersSeen() {
        return members.size();
      }

      @Override
      public int membersExpected() {
        return members.size();
      }

      @Override
      public String refusal() {
        return null;
      }

      @Override
      public String self() {
        return self;
      }

      @Override
      public List<String> routers() {
        return members;
      }

      @Override
      public JsonObject toJson() {
        return new JsonObject();
      }
    };
  }
}
