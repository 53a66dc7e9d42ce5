package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.Checkpoint;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterView;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * {@link ClusterSync} alone on a real event bus and local shared state, another replica played by the test through the
 * same shared map and bus: states the cluster holds are taken over at start and as they are published, a write loses
 * to a newer cluster state and takes it over, an empty cluster starts from the decisions file, and a quarantine ends
 * at the instant it carries.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ClusterSyncTest {
  private static final List<String> FLEET = List.of("P0:prefill", "D0:decode", "D1:decode");
  private final AtomicLong now = new AtomicLong(1_000_000);

  @Test
  void statesAnotherReplicaDecidedAreTakenOverAtStartAndAsTheyArePublished(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = BreakerParts.unreachable(vertx, FLEET, new JsonObject(), now, null);
    EngineStateEvent drained = new EngineStateEvent("D1", EngineState.DRAINING, "admin", 0, null, now.get() - 10, "replica-b");
    EngineStateEvent quarantined = new EngineStateEvent("D0", EngineState.QUARANTINED, "admin", now.get() + 600_000, null,
        now.get() + 5, "replica-b");
    Checkpoint journaled = ctx.checkpoint(2);
    vertx.eventBus().<JsonObject>consumer(Addresses.JOURNAL_EVENT, m -> ctx.verify(() -> {
      if (!"engine_state".equals(m.body().getString("event"))) return;
      assertEquals("replica-b", m.body().getString("decided_by"), "a change another replica decided says who: " + m.body());
      if ("D0".equals(m.body().getString("iid"))) {
        assertEquals(EngineState.QUARANTINED, parts.state("D0"), "a published state is taken over as it arrives");
        assertEquals(now.get() + 600_000, parts.book.quarantineUntil("D0"), "with the end it carries");
      }
      journaled.flag();
    }));
    vertx.runOnContext(v -> parts.shared.putState(drained)
        .compose(written -> parts.sync.start())
        .onComplete(ctx.succeeding(started -> ctx.verify(() -> {
          assertEquals(EngineState.DRAINING, parts.state("D1"), "the cluster's state of D1 is taken over at start");
          vertx.eventBus().publish(Addresses.FLEET_CHANGED, quarantined.toJson());
        }))));
  }

  /**
   * A check with nothing new reads no map; a change of the router members makes the next check resync, and a state the
   * cluster holds whose message this replica missed (written to the map only) is then taken over; so is one after a
   * member joined (the launcher's {@link Addresses#PLACEMENT_PEER_JOINED}).
   */
  @Test
  void aCheckResyncsOnlyWhenTheMembersChangedOrAPeerJoined(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = BreakerParts.unreachable(vertx, FLEET, new JsonObject(), now, null);
    EngineStateEvent missed = new EngineStateEvent("D1", EngineState.DRAINING, "admin", 0, null, now.get() + 10, "replica-b");
    EngineStateEvent missedToo = new EngineStateEvent("D0", EngineState.DRAINING, "admin", 0, null, now.get() + 20, "replica-b");
    vertx.runOnContext(v -> parts.sync.start()
        .compose(started -> parts.sync.check())
        .compose(first -> parts.shared.putState(missed).compose(written -> parts.sync.check()).map(second -> {
          ctx.verify(() -> {
            assertEquals(false, second, "nothing changed: no resync");
            assertNotEquals(EngineState.DRAINING, parts.state("D1"), "a state written to the map only is not read without a resync");
          });
          vertx.sharedData().getLocalMap(ClusterView.MAP).put(ClusterView.KEY, view(List.of("10.0.0.1:5701", "10.0.0.2:5701")));
          return null;
        }))
        .compose(x -> parts.sync.check())
        .compose(moved -> {
          ctx.verify(() -> {
            assertEquals(true, moved, "the members changed: a resync");
            assertEquals(EngineState.DRAINING, parts.state("D1"), "the missed state is taken over");
          });
          return parts.shared.putState(missedToo).compose(written -> parts.sync.check());
        })
        .compose(again -> {
          ctx.verify(() -> assertEquals(false, again, "the same members: no resync"));
          vertx.eventBus().publish(Addresses.PLACEMENT_PEER_JOINED, null, new io.vertx.core.eventbus.DeliveryOptions().setLocalOnly(true));
          return Future.<Void>future(p -> vertx.setTimer(50, t -> p.complete())).compose(t -> parts.sync.check());
        })
        .onComplete(ctx.succeeding(joined -> ctx.verify(() -> {
          assertEquals(true, joined, "a peer joined: a resync");
          assertEquals(EngineState.DRAINING, parts.state("D0"), "the state missed before it is taken over");
          vertx.sharedData().getLocalMap(ClusterView.MAP).remove(ClusterView.KEY);
          ctx.completeNow();
        }))));
  }

  private static ClusterView view(List<String> members) {
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
        return members.get(0);
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

  @Test
  void aWriteLosesToANewerClusterStateAndTheBookTakesThatOver(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = BreakerParts.unreachable(vertx, FLEET, new JsonObject(), now, null);
    EngineStateEvent newer = new EngineStateEvent("D0", EngineState.DRAINING, "admin", 0, null, now.get() + 1_000, "replica-b");
    vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> ctx.verify(() -> {
      EngineStateEvent event = EngineStateEvent.fromJson(m.body());
      if (event != null && event.state() == EngineState.EJECTED) ctx.failNow("an ejection older than the cluster's drain was published");
    }));
    vertx.runOnContext(v -> parts.sync.start()
        .compose(started -> parts.shared.putState(newer))
        .compose(written -> parts.intake.step(() -> parts.book.eject("D0", false)))
        .compose(stepped -> parts.shared.state("D0"))
        .onComplete(ctx.succeeding(held -> ctx.verify(() -> {
          assertEquals("draining", held.getString("state"), "the cluster keeps its newer state: " + held);
          assertEquals(EngineState.DRAINING, parts.state("D0"), "and this replica's book takes it over");
          ctx.completeNow();
        }))));
  }

  @Test
  void anEmptyClusterStartsFromTheDecisionsFileAndSaysSo(@TempDir Path dir, Vertx vertx, VertxTestContext ctx) throws Exception {
    Path file = dir.resolve("decisions.json");
    EngineStateEvent drain = new EngineStateEvent("D0", EngineState.DRAINING, "admin", 0, null, now.get() - 5_000, "replica-b");
    EngineStateEvent over = new EngineStateEvent("D1", EngineState.QUARANTINED, "admin", now.get() - 1, null, now.get() - 9_000, "replica-b");
    Files.writeString(file, new JsonObject().put("format", 1).put("decisions", new JsonArray().add(drain.toJson()).add(over.toJson())).encode());
    BreakerParts parts = BreakerParts.unreachable(vertx, FLEET,
        new JsonObject().put("cluster", new JsonObject().put("decisions_path", file.toString())), now, null);
    Checkpoint said = ctx.checkpoint();
    Checkpoint started = ctx.checkpoint();
    vertx.eventBus().<JsonObject>consumer(Addresses.JOURNAL_EVENT, m -> ctx.verify(() -> {
      if (!"cluster_start".equals(m.body().getString("event"))) return;
      m.reply(null);
      assertEquals("decisions_file", m.body().getString("from"));
      assertEquals(file.toString(), m.body().getString("path"));
      assertEquals(List.of("D0"), m.body().getJsonArray("restored").stream().map(e -> ((JsonObject) e).getString("iid")).toList(),
          "the drain is restored; the quarantine whose end has passed is over");
      said.flag();
    }));
    vertx.runOnContext(v -> parts.sync.start().onComplete(ctx.succeeding(done -> ctx.verify(() -> {
      assertEquals(EngineState.DRAINING, parts.state("D0"));
      assertEquals(EngineState.SERVING, parts.state("D1"));
      started.flag();
    }))));
  }

  @Test
  void aQuarantineEndsAtTheInstantItCarries(Vertx vertx, VertxTestContext ctx) {
    BreakerParts parts = BreakerParts.of(vertx, BreakerParts.unreachable(FLEET), new JsonObject(), System::currentTimeMillis, null);
    parts.sync.onExpiry(() -> parts.intake.step(parts.book::tick));
    vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_CHANGED, m -> ctx.verify(() -> {
      EngineStateEvent event = EngineStateEvent.fromJson(m.body());
      if (event == null || event.state() != EngineState.EJECTED) return;
      assertEquals("D0", event.iid());
      assertEquals("quarantine_expired", event.cause(), "the quarantine ended on its own timer");
      assertEquals(0, parts.book.quarantineUntil("D0"), "no longer quarantined");
      ctx.completeNow();
    }));
    vertx.runOnContext(v -> parts.sync.start()
        .compose(started -> parts.intake.step(() -> parts.book.quarantine("D0", 0.05, false)))
        .onComplete(ctx.succeeding(q -> ctx.verify(() -> assertEquals(EngineState.QUARANTINED, parts.state("D0"))))));
  }
}
