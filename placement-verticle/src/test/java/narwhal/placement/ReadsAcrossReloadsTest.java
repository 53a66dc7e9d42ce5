package narwhal.placement;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static narwhal.placement.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Readings whose read began before something changed under it: a hot reload that re-points or removes the engine, an
 * engine whose {@code /metrics} answers far past any bound, a replica whose loop was held (frozen) while an answer
 * waited. Real HTTP engines (a {@code /metrics} that answers when the test says so) on a Vert.x of their own, a real
 * {@link LoadReadings} on the test's.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReadsAcrossReloadsTest {
  private static final String REPLICA = "placement-test";
  private Vertx engines;

  @BeforeEach
  void start() {
    engines = Vertx.vertx();
  }

  @AfterEach
  void stop() throws Exception {
    engines.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  /** An engine's {@code /metrics}: answers {@code running} at once, or holds each request while {@link #hold} is set. */
  static final class MetricsEngine {
    final AtomicInteger asked = new AtomicInteger();
    final List<HttpServerRequest> held = new ArrayList<>();
    volatile boolean hold;
    volatile double running;
    /** The body's padding, in bytes of comment lines after the gauges. */
    volatile int padding;
    HttpServer server;

    MetricsEngine(double running, boolean hold) {
      this.running = running;
      this.hold = hold;
    }

    String url() {
      return "http://127.0.0.1:" + server.actualPort();
    }

    String body() {
      StringBuilder text = new StringBuilder()
          .append("vllm:num_requests_running{model_name=\"m\"} ").append(running).append('\n')
          .append("vllm:num_requests_waiting{model_name=\"m\"} 0\n")
          .append("vllm:kv_cache_usage_perc{model_name=\"m\"} 0.1\n");
      String line = "# padding padding padding padding padding padding padding padding padding padding padding\n";
      while (text.length() < padding) text.append(line);
      return text.toString();
    }

    /** A {@code /v1/models} answer instead of {@code /metrics}'s, when set. */
    volatile String listing;

    /** Answers every held request with the figures of now. */
    synchronized void release() {
      String body = listing != null ? listing : body();
      held.forEach(r -> r.response().end(body));
      held.clear();
    }

    synchronized int heldCount() {
      return held.size();
    }

    private synchronized void handle(HttpServerRequest request) {
      asked.incrementAndGet();
      if (hold) held.add(request);
      else request.response().end(body());
    }
  }

  private Future<MetricsEngine> engine(double running, boolean hold) {
    MetricsEngine engine = new MetricsEngine(running, hold);
    return engines.createHttpServer().requestHandler(engine::handle).listen(0, "127.0.0.1").map(server -> {
      engine.server = server;
      return engine;
    });
  }

  private static NarwhalConfig config(JsonObject placement, String... iidUrlRole) {
    JsonArray list = new JsonArray();
    for (int i = 0; i < iidUrlRole.length; i += 3) {
      list.add(new JsonObject().put("iid", iidUrlRole[i]).put("url", iidUrlRole[i + 1]).put("role", iidUrlRole[i + 2]));
    }
    return NarwhalConfig.fromJson(new JsonObject().put("model", "m").put("engines", list).put("placement", placement));
  }

  private static EngineLoad load(PlacementTable table, String iid) {
    return table.view().stream().filter(v -> v.iid().equals(iid)).findFirst().map(PlacementTable.EngineView::load).orElse(null);
  }

  @Test
  void aReadBegunBeforeAReloadIsNoReadingOfTheEngineItRepointedNorOfOneItRemoved(Vertx vertx, VertxTestContext ctx) {
    // D0 moves from A to B and D1 is removed while their reads at the old entries are under way: those answers are not
    // readings of what the fleet now lists. Taken as such, D0's new entry carried the old address's figures, shared
    // with every replica and the shared map, until its next reading, and D1's reading and read counters came back
    // after the reload had dropped them (and its reading into the shared map).
    JsonObject placement = new JsonObject().put("policy", "load").put("metrics_interval_s", 1).put("metrics_timeout_s", 30);
    vertx.runOnContext(v -> Future.all(engine(0, false), engine(7, true), engine(5, true), engine(1, false)).onComplete(ctx.succeeding(all -> {
      MetricsEngine p0 = all.resultAt(0);
      MetricsEngine a = all.resultAt(1);
      MetricsEngine c = all.resultAt(2);
      MetricsEngine b = all.resultAt(3);
      NarwhalConfig before = config(placement, "P0", p0.url(), "prefill", "D0", a.url(), "decode", "D1", c.url(), "decode");
      NarwhalConfig after = config(placement, "P0", p0.url(), "prefill", "D0", b.url(), "decode");
      AtomicReference<NarwhalConfig> current = new AtomicReference<>(before);
      PlacementTable table = new PlacementTable(before.engines(), System::currentTimeMillis);
      table.configure(before.placement(), before.recovery().ejectAfter());
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), current::get, table, REPLICA, () -> "", registry, () -> { });
      readings.track(before.engines());
      readings.arm();
      AtomicReference<EngineLoad> first = new AtomicReference<>();
      AtomicInteger bAsked = new AtomicInteger();
      until(vertx, () -> a.heldCount() == 1 && c.heldCount() == 1)
          .compose(x -> {
            // the reload, as PlacementVerticle applies it
            current.set(after);
            table.setEngines(after.engines());
            table.configure(after.placement(), after.recovery().ejectAfter());
            readings.track(after.engines());
            readings.arm();
            a.release();
            c.release();
            return until(vertx, () -> load(table, "D0") != null);
          })
          .compose(x -> {
            first.set(load(table, "D0"));
            bAsked.set(b.asked.get());
            // a later reading of D0 at B, asked after both old answers went out
            return until(vertx, () -> b.asked.get() > bAsked.get() && load(table, "D0").readAtMs() > first.get().readAtMs());
          })
          .compose(x -> vertx.sharedData().<String, String>getAsyncMap(LoadReadings.LOADS).compose(AsyncMap::entries))
          .onComplete(ctx.succeeding(shared -> ctx.verify(() -> {
            assertEquals(1.0, first.get().running(), "D0's first reading after its move is of its new address: " + first.get());
            assertNull(load(table, "D1"), "D1 is gone");
            assertFalse(shared.containsKey("D1"), "no reading of the removed D1 in the shared map: " + shared.keySet());
            assertEquals(1.0, EngineLoad.fromJson(new JsonObject(shared.get("D0"))).running(), "the shared D0 is the new address's");
            assertTrue(registry.find("narwhal.engine.load.reads").tags("iid", "D1").counters().isEmpty(),
                "no read series of the removed D1 came back");
            readings.stop();
            ctx.completeNow();
          })));
    })));
  }

  @Test
  void anEndlessMetricsBodyIsAFailedReadingAndItsTransferIsCut(Vertx vertx, VertxTestContext ctx) {
    // D0's /metrics streams gauges, then comment lines without end. Buffered whole, it filled the replica's memory for as
    // long as the engine sent (a timeout ended the wait, not the transfer), and each round opened another such stream.
    JsonObject placement = new JsonObject().put("policy", "load").put("metrics_interval_s", 60).put("metrics_timeout_s", 20);
    Promise<Void> cut = Promise.promise();
    AtomicInteger streams = new AtomicInteger();
    engines.createHttpServer().requestHandler(request -> {
      streams.incrementAndGet();
      request.connection().closeHandler(v -> cut.tryComplete());
      request.response().setChunked(true).write("vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n");
      io.vertx.core.buffer.Buffer chunk = io.vertx.core.buffer.Buffer.buffer("# " + "x".repeat(64 * 1024 - 3) + "\n");
      Runnable[] more = new Runnable[1];
      more[0] = () -> {
        while (!request.response().writeQueueFull() && !request.response().closed()) request.response().write(chunk);
        if (!request.response().closed()) request.response().drainHandler(v -> more[0].run());
      };
      more[0].run();
    }).listen(0, "127.0.0.1").onComplete(ctx.succeeding(server -> vertx.runOnContext(v -> {
      NarwhalConfig config = config(placement, "P0", "http://127.0.0.1:" + server.actualPort(), "prefill",
          "D0", "http://127.0.0.1:" + server.actualPort() + "/d0", "decode");
      PlacementTable table = new PlacementTable(config.engines(), System::currentTimeMillis);
      table.configure(config.placement(), config.recovery().ejectAfter());
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), () -> config, table, REPLICA, () -> "", new SimpleMeterRegistry(), () -> { });
      readings.track(config.engines());
      readings.read(config.engine("D0").orElseThrow()).compose(reading -> {
        ctx.verify(() -> {
          assertFalse(reading.ok(), "an endless body is no reading: " + reading);
          assertTrue(reading.error().contains("larger than " + EngineGet.MAX_BYTES + " bytes"), reading.error());
        });
        return cut.future();
      }).onComplete(ctx.succeeding(x -> {
        readings.stop();
        ctx.completeNow();
      }));
    })));
  }

  @Test
  void anAnswerThatWaitedOutAFrozenLoopIsNoReadingOfNow(Vertx vertx, VertxTestContext ctx) {
    // D0 answers while the replica's loop is held (a SIGSTOP, a long pause): handled at the thaw, that answer's figures
    // were stamped with the thaw's time and passed for the newest reading (shared with every replica, over a backup's
    // newer one) though they were as old as the freeze.
    JsonObject placement = new JsonObject().put("policy", "load").put("metrics_interval_s", 1).put("metrics_timeout_s", 0.2);
    vertx.runOnContext(v -> Future.all(engine(0, false), engine(7, true)).onComplete(ctx.succeeding(all -> {
      MetricsEngine p0 = all.resultAt(0);
      MetricsEngine d0 = all.resultAt(1);
      NarwhalConfig config = config(placement, "P0", p0.url(), "prefill", "D0", d0.url(), "decode");
      PlacementTable table = new PlacementTable(config.engines(), System::currentTimeMillis);
      table.configure(config.placement(), config.recovery().ejectAfter());
      LoadReadings readings = new LoadReadings(vertx, vertx.sharedData(), () -> config, table, REPLICA, () -> "", new SimpleMeterRegistry(), () -> { });
      readings.track(config.engines());
      io.vertx.core.Context loop = vertx.getOrCreateContext();
      readings.arm();
      java.util.concurrent.CountDownLatch thaw = new java.util.concurrent.CountDownLatch(1);
      until(vertx, () -> d0.heldCount() == 1).compose(x -> {
        loop.runOnContext(frozen -> {
          try {
            thaw.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
        engines.executeBlocking(() -> {
          d0.release(); // 7 running when asked, into the frozen replica's socket
          Thread.sleep(1_000); // the freeze
          d0.running = 2;
          d0.hold = false;
          thaw.countDown();
          return null;
        });
        return until(vertx, () -> thaw.getCount() == 0 && load(table, "D0") != null);
      }).onComplete(ctx.succeeding(x -> ctx.verify(() -> {
        EngineLoad first = load(table, "D0");
        assertTrue(first.ok() && first.running() == 2.0, "D0's first reading after the thaw is of after it: " + first);
        readings.stop();
        ctx.completeNow();
      })));
    })));
  }

  /** An engine's {@code /v1/models} listing {@code adapter} beside the model: at once, or held until released. */
  private Future<MetricsEngine> lister(String adapter, boolean hold) {
    MetricsEngine engine = new MetricsEngine(0, hold);
    String body = new JsonObject().put("object", "list").put("data", new JsonArray()
        .add(new JsonObject().put("id", "m").put("object", "model"))
        .add(new JsonObject().put("id", adapter).put("object", "model").put("parent", "m"))).encode();
    return engines.createHttpServer().requestHandler(request -> {
      synchronized (engine) {
        engine.asked.incrementAndGet();
        if (engine.hold) engine.held.add(request);
        else request.response().end(body);
      }
    }).listen(0, "127.0.0.1").map(server -> {
      engine.server = server;
      engine.listing = body;
      return engine;
    });
  }

  @Test
  void aListingBegunBeforeAReloadIsNotTheListingOfTheEngineItRepointed(Vertx vertx, VertxTestContext ctx) {
    // D1 moves from A (serving old-adapter) to B (serving new-adapter) while A's /v1/models is being read. Taken as D1's
    // listing, A's answer sent requests naming old-adapter to B, which does not serve it, and B's own listing waited for
    // the next refresh (the old read held D1's place).
    JsonObject placement = new JsonObject().put("policy", "load").put("models_refresh_s", 1);
    vertx.runOnContext(v -> Future.all(lister("p-adapter", false), lister("old-adapter", true), lister("new-adapter", false)).onComplete(ctx.succeeding(all -> {
      MetricsEngine p0 = all.resultAt(0);
      MetricsEngine a = all.resultAt(1);
      MetricsEngine b = all.resultAt(2);
      NarwhalConfig before = config(placement, "P0", p0.url(), "prefill", "D1", a.url(), "decode");
      NarwhalConfig after = config(placement, "P0", p0.url(), "prefill", "D1", b.url(), "decode");
      AtomicReference<NarwhalConfig> current = new AtomicReference<>(before);
      PlacementTable table = new PlacementTable(before.engines(), System::currentTimeMillis);
      table.configure(before.placement(), before.recovery().ejectAfter());
      ModelListings listings = new ModelListings(vertx, current::get, table, () -> "", REPLICA);
      listings.arm();
      java.util.concurrent.atomic.AtomicBoolean oldSeen = new java.util.concurrent.atomic.AtomicBoolean();
      AtomicInteger bAsked = new AtomicInteger();
      until(vertx, () -> a.heldCount() == 1)
          .compose(x -> {
            current.set(after);
            table.setEngines(after.engines());
            listings.arm();
            a.release();
            vertx.setPeriodic(0, 5, id -> {
              if (table.knows("old-adapter")) oldSeen.set(true);
            });
            return until(vertx, () -> table.knows("new-adapter"));
          })
          .compose(x -> {
            bAsked.set(b.asked.get());
            // B's next listing, asked after A's answer went out
            return until(vertx, () -> b.asked.get() > bAsked.get() + 1);
          })
          .onComplete(ctx.succeeding(x -> ctx.verify(() -> {
            assertFalse(oldSeen.get(), "D1's old address's listing was never taken for its new entry");
            assertTrue(table.knows("new-adapter"));
            listings.stop();
            ctx.completeNow();
          })));
    })));
  }
}
