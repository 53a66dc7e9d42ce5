package narwhal.breaker;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.Rendezvous;
import narwhal.sim.SimFleet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * {@link LivenessSweep} as replica A of three (B, C) sees it, with real simulated engines and a clock the test moves:
 * A checks the engines it owns, no others while their owners announce their sweeps, and takes over only the engines
 * it is next in line for once their owner (C) has been silent for an interval and a health timeout more.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LivenessSweepTest {
  private static final String A = "10.0.0.1:5701";
  private static final String B = "10.0.0.2:5701";
  private static final String C = "10.0.0.3:5701";
  private static final List<String> MEMBERS = List.of(A, B, C);
  private static final long INTERVAL_MS = 10_000;
  private static final long HEALTH_TIMEOUT_MS = 2_000;

  private final AtomicLong now = new AtomicLong(1_000_000);

  @Test
  void eachEngineIsCheckedByItsOwnerAndASilentOwnersEnginesByTheNextInLine(Vertx vertx) throws Exception {
    List<String> specs = new ArrayList<>();
    for (int i = 0; i < 12; i++) specs.add("E" + i + ":" + (i < 3 ? "prefill" : "decode"));
    SimFleet fleet = BreakerParts.sims(vertx, specs).await(20, TimeUnit.SECONDS);
    JsonObject overrides = new JsonObject().put("recovery", new JsonObject().put("monitor_interval_s", 1).put("liveness_every", 10));
    BreakerParts parts = BreakerParts.over(vertx, fleet, overrides, now::get, null);
    vertx.sharedData().getLocalMap(ClusterView.MAP).put(ClusterView.KEY, view());
    LivenessSweep sweep = new LivenessSweep(vertx, () -> parts.config, parts.book, parts.prober, parts.sync, parts.intake,
        parts.metrics, parts.guard, "breaker-a", now::get);
    // everything on one context: a message's handlers, then the next sweep, run in the order they were queued
    Context context = vertx.getOrCreateContext();
    LinkedBlockingQueue<Set<String>> checkedByA = new LinkedBlockingQueue<>();
    LinkedBlockingQueue<Boolean> heardB = new LinkedBlockingQueue<>();
    on(context, () -> sweep.start().compose(v -> vertx.eventBus().<JsonObject>consumer(Addresses.LIVENESS_SWEPT, msg -> {
      String origin = msg.body().getString("origin");
      if ("breaker-a".equals(origin)) checkedByA.add(iids(msg.body().getJsonArray("iids")));
      if ("breaker-b".equals(origin)) heardB.add(true);
    }).completion()));
    Set<String> ownA = ranked(specs, A, 0);
    Set<String> ownB = ranked(specs, B, 0);
    Set<String> takenFromC = new TreeSet<>(ranked(specs, C, 0));
    takenFromC.retainAll(ranked(specs, A, 1));
    assertFalse(ownA.isEmpty() || ownB.isEmpty() || takenFromC.isEmpty(), "each set has engines: " + ownA + ownB + takenFromC);
    assertEquals(12, parts.book.servingEngines().size(), "every engine serving");

    Map<String, Integer> checks = new HashMap<>();
    assertEquals(ownA, sweepOnce(context, sweep, checkedByA), "first sweep: A's own engines, at once");
    awaitChecks(vertx, parts, checks, ownA);
    heardFromB(vertx, ownB, heardB);
    now.addAndGet(INTERVAL_MS);
    heardFromB(vertx, ownB, heardB);
    assertEquals(ownA, sweepOnce(context, sweep, checkedByA), "an interval on: A's own again; C's not yet overdue");
    awaitChecks(vertx, parts, checks, ownA);
    now.addAndGet(INTERVAL_MS + HEALTH_TIMEOUT_MS);
    heardFromB(vertx, ownB, heardB);
    Set<String> expected = new TreeSet<>(ownA);
    expected.addAll(takenFromC);
    assertEquals(expected, sweepOnce(context, sweep, checkedByA),
        "C silent for two intervals and a timeout: A takes over the engines it is next in line for, not B's, not C's others");
    awaitChecks(vertx, parts, checks, expected);
    for (String iid : ownB) {
      assertEquals(0.0, parts.count("narwhal.engine.liveness.checks", "iid", iid, "outcome", "ok"), "B's engines never checked here");
    }
  }

  /** Waits until the checks of the sweep just announced have run (each counted once more, passing). */
  private static void awaitChecks(Vertx vertx, BreakerParts parts, Map<String, Integer> checks, Set<String> swept) throws Exception {
    swept.forEach(iid -> checks.merge(iid, 1, Integer::sum));
    BreakerParts.until(vertx, () -> Future.succeededFuture(checks.entrySet().stream().allMatch(e ->
        parts.count("narwhal.engine.liveness.checks", "iid", e.getKey(), "outcome", "ok") == e.getValue()))).await(20, TimeUnit.SECONDS);
  }

  private static Set<String> sweepOnce(Context context, LivenessSweep sweep, LinkedBlockingQueue<Set<String>> checked) throws Exception {
    context.runOnContext(v -> sweep.sweep());
    Set<String> iids = checked.poll(20, TimeUnit.SECONDS);
    assertNotNull(iids, "A announced a sweep");
    return iids;
  }

  /** B's announcement of the engines it checks, as B would publish it; delivered before the test goes on. */
  private static void heardFromB(Vertx vertx, Set<String> iids, LinkedBlockingQueue<Boolean> heard) throws Exception {
    vertx.eventBus().publish(Addresses.LIVENESS_SWEPT, ClusterSeal.of(vertx).seal(Addresses.LIVENESS_SWEPT,
        new JsonObject().put("origin", "breaker-b").put("iids", new JsonArray(new ArrayList<>(iids)))));
    assertNotNull(heard.poll(10, TimeUnit.SECONDS), "B's sweep delivered");
  }

  private static void on(Context context, java.util.function.Supplier<Future<Void>> work) throws Exception {
    Promise<Void> done = Promise.promise();
    context.runOnContext(v -> work.get().onComplete(done));
    done.future().await(20, TimeUnit.SECONDS);
  }

  private static Set<String> ranked(List<String> specs, String member, int rank) {
    Set<String> out = new TreeSet<>();
    for (String spec : specs) {
      String iid = spec.split(":")[0];
      if (Rendezvous.rank(iid, MEMBERS, member) == rank) out.add(iid);
    }
    return out;
  }

  private static Set<String> iids(JsonArray array) {
    Set<String> out = new TreeSet<>();
    array.forEach(o -> out.add((String) o));
    return out;
  }

  private static ClusterView view() {
    return new ClusterView() {
      @Override
      public int membersSeen() {
        return 3;
      }

      @Override
      public int membersExpected() {
        return 3;
      }

      @Override
      public String refusal() {
        return null;
      }

      @Override
      public String self() {
        return A;
      }

      @Override
      public List<String> routers() {
        return MEMBERS;
      }

      @Override
      public JsonObject toJson() {
        return new JsonObject();
      }
    };
  }
}
