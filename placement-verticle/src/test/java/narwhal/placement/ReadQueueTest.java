package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ReadQueue}: a bound on reads under way, the others in the order asked, each outcome its read's; a read that
 * hangs gives its place up after the hold, so it holds back no other read for its whole timeout.
 */
@ExtendWith(VertxExtension.class)
class ReadQueueTest {
  @Test
  void atMostTheLimitRunAndTheOthersStartInOrderAsThoseEnd(Vertx vertx, VertxTestContext ctx) {
    vertx.runOnContext(v -> {
      // a hold far longer than the test: only ends free places here
      ReadQueue queue = new ReadQueue(vertx, 3, 600_000);
      List<Promise<Integer>> started = new ArrayList<>();
      List<Future<Integer>> outcomes = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        outcomes.add(queue.submit(() -> {
          Promise<Integer> p = Promise.promise();
          started.add(p);
          return p.future();
        }));
      }
      ctx.verify(() -> {
        assertEquals(3, started.size(), "three under way, seven waiting");
        assertEquals(7, queue.waiting());
        started.get(1).fail("engine gone");
        assertEquals(4, started.size(), "a failed read frees its place too");
        for (int i = 0; i < 10; i++) {
          if (!started.get(i).future().isComplete()) started.get(i).complete(i);
          long underWay = started.stream().filter(p -> !p.future().isComplete()).count();
          assertTrue(underWay <= 3, "never more than three at once: " + underWay);
        }
        assertEquals(0, queue.waiting());
        assertTrue(outcomes.get(1).failed());
        for (int i = 0; i < 10; i++) if (i != 1) assertEquals(i, outcomes.get(i).result(), "each outcome is its own read's");
      });
      ctx.completeNow();
    });
  }

  @Test
  void readsThatHangGiveTheirPlaceUpAfterTheHold(Vertx vertx, VertxTestContext ctx) {
    vertx.runOnContext(v -> {
      ReadQueue queue = new ReadQueue(vertx, 3, 20);
      List<Integer> started = new ArrayList<>();
      List<Future<Integer>> outcomes = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        int n = i;
        // every read hangs (never completes) but the last
        outcomes.add(queue.submit(() -> {
          started.add(n);
          return n == 9 ? Future.succeededFuture(n) : Promise.<Integer>promise().future();
        }));
      }
      ctx.verify(() -> assertEquals(List.of(0, 1, 2), started));
      outcomes.get(9).onComplete(ctx.succeeding(nine -> ctx.verify(() -> {
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), started, "the others in order, while the first still hang");
        assertTrue(outcomes.subList(0, 9).stream().noneMatch(Future::isComplete));
        ctx.completeNow();
      })));
    });
  }

  @Test
  void readsThatEndAtOnceOrThrowAreTheirOwnOutcomeAndDoNotDeepenTheStack(Vertx vertx, VertxTestContext ctx) {
    vertx.runOnContext(v -> {
      ReadQueue queue = new ReadQueue(vertx, 1, 600_000);
      Promise<String> first = Promise.promise();
      queue.submit(first::future);
      List<Future<String>> rest = new ArrayList<>();
      for (int i = 0; i < 100_000; i++) rest.add(queue.submit(() -> Future.failedFuture("engine gone")));
      Future<String> thrown = queue.submit(() -> {
        throw new IllegalArgumentException("bad url");
      });
      Future<String> ok = queue.submit(() -> Future.succeededFuture("ok"));
      first.complete("first");
      ctx.verify(() -> {
        assertEquals(0, queue.waiting(), "all ran, none overflowed the stack");
        assertTrue(rest.stream().allMatch(f -> "engine gone".equals(f.cause().getMessage())));
        assertEquals("bad url", thrown.cause().getMessage());
        assertEquals("ok", ok.result());
      });
      ctx.completeNow();
    });
  }
}
