package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link ReadQueue}: a bound on reads under way, the others in the order asked, each outcome its read's. */
class ReadQueueTest {
  @Test
  void atMostTheLimitRunAndTheOthersStartInOrderAsThoseEnd() {
    ReadQueue queue = new ReadQueue(3);
    List<Promise<Integer>> started = new ArrayList<>();
    List<Future<Integer>> outcomes = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      outcomes.add(queue.submit(() -> {
        Promise<Integer> p = Promise.promise();
        started.add(p);
        return p.future();
      }));
    }
    assertEquals(3, started.size(), "three under way, seven waiting");
    assertEquals(10, queue.pending());
    started.get(1).fail("engine gone");
    assertEquals(4, started.size(), "a failed read frees its place too");
    for (int i = 0; i < 10; i++) {
      if (!started.get(i).future().isComplete()) started.get(i).complete(i);
      long underWay = started.stream().filter(p -> !p.future().isComplete()).count();
      assertTrue(underWay <= 3, "never more than three at once: " + underWay);
      long ended = started.stream().filter(p -> p.future().isComplete()).count();
      assertEquals(Math.min(10, ended + 3), started.size(), "the next in order starts as one ends");
    }
    assertEquals(0, queue.pending());
    assertTrue(outcomes.get(1).failed());
    for (int i = 0; i < 10; i++) if (i != 1) assertEquals(i, outcomes.get(i).result(), "each outcome is its own read's");
  }

  @Test
  void readsThatEndAtOnceDoNotDeepenTheStack() {
    ReadQueue queue = new ReadQueue(1);
    Promise<Void> first = Promise.promise();
    queue.submit(() -> first.future());
    List<Future<Void>> rest = new ArrayList<>();
    for (int i = 0; i < 200_000; i++) rest.add(queue.submit(() -> Future.failedFuture("bad url")));
    for (int i = 0; i < 1_000; i++) rest.add(queue.submit(() -> {
      throw new IllegalArgumentException("bad url");
    }));
    first.complete();
    assertEquals(0, queue.pending(), "all ran, none overflowed the stack");
    assertTrue(rest.stream().allMatch(Future::failed));
  }
}
