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

/** {@link ReadQueue}: a few reads started per turn of the event loop, in order, none held back by a read that hangs. */
@ExtendWith(VertxExtension.class)
class ReadQueueTest {
  @Test
  void aFewStartPerTurnInOrderAndAHungReadHoldsBackNoOther(Vertx vertx, VertxTestContext ctx) {
    vertx.runOnContext(v -> {
      ReadQueue queue = new ReadQueue(vertx, 3);
      List<Integer> started = new ArrayList<>();
      List<Future<Integer>> outcomes = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        int n = i;
        // every read hangs (never completes) but the last: none may hold back the ones after it
        outcomes.add(queue.submit(() -> {
          started.add(n);
          return n == 9 ? Future.succeededFuture(n) : Promise.<Integer>promise().future();
        }));
      }
      ctx.verify(() -> {
        assertEquals(List.of(0, 1, 2), started, "three in this turn");
        assertEquals(7, queue.waiting());
      });
      outcomes.get(9).onComplete(ctx.succeeding(nine -> ctx.verify(() -> {
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), started, "the others in the next turns, in order, while the first hang");
        assertEquals(9, nine);
        assertTrue(outcomes.subList(0, 9).stream().noneMatch(Future::isComplete));
        ctx.completeNow();
      })));
    });
  }

  @Test
  void readsThatEndAtOnceOrThrowAreEachTheirOwnOutcome(Vertx vertx, VertxTestContext ctx) {
    vertx.runOnContext(v -> {
      ReadQueue queue = new ReadQueue(vertx, 2);
      Future<String> ok = queue.submit(() -> Future.succeededFuture("ok"));
      Future<String> failed = queue.submit(() -> Future.failedFuture("engine gone"));
      Future<String> thrown = queue.submit(() -> {
        throw new IllegalArgumentException("bad url");
      });
      Future.join(ok, failed, thrown).onComplete(all -> ctx.verify(() -> {
        assertEquals("ok", ok.result());
        assertEquals("engine gone", failed.cause().getMessage());
        assertEquals("bad url", thrown.cause().getMessage());
        assertEquals(0, queue.waiting());
        ctx.completeNow();
      }));
    });
  }
}
