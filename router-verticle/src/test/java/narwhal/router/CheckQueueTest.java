package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Preflight's queue: a bounded number of checks at once, never two on one engine, rows in the added order. */
class CheckQueueTest {
  @Test
  void checksSharingAnEngineNeverRunTogetherAndTheReportKeepsTheAddedOrder() {
    CheckQueue<String> queue = new CheckQueue<>(3);
    Map<String, Promise<Void>> running = new LinkedHashMap<>();
    Set<String> busy = new HashSet<>();
    List<String> overlaps = new ArrayList<>();
    List<List<String>> pairs = List.of(List.of("P0", "D0"), List.of("P0", "D1"), List.of("P1", "D0"), List.of("P1", "D1"),
        List.of("P2", "D2"), List.of("P2", "D0"));
    for (List<String> pair : pairs) {
      String name = pair.get(0) + "→" + pair.get(1);
      queue.add(pair, row -> {
        for (String engine : pair) if (!busy.add(engine)) overlaps.add(name + " while " + engine + " busy");
        Promise<Void> check = Promise.promise();
        running.put(name, check);
        return check.future().onComplete(ar -> {
          pair.forEach(busy::remove);
          row.accept(name);
        });
      });
    }
    List<String> progress = new ArrayList<>();
    Future<List<String>> report = queue.run(List.of(5, 4, 3, 2, 1, 0), progress::add);
    assertEquals(List.of("P2→D0", "P1→D1"), List.copyOf(running.keySet()), "P2→D2 waits for P2; the rest wait for D0 or D1");
    while (!report.isComplete()) {
      String first = running.keySet().iterator().next();
      running.remove(first).complete();
    }
    assertEquals(List.of(), overlaps);
    assertEquals(6, progress.size());
    assertEquals(List.of("P0→D0", "P0→D1", "P1→D0", "P1→D1", "P2→D2", "P2→D0"), report.result());
    assertTrue(busy.isEmpty());
  }

  @Test
  void aCheckThatFailsAtOnceDoesNotStopTheOthers() {
    CheckQueue<String> queue = new CheckQueue<>(2);
    for (int i = 0; i < 5; i++) {
      String engine = "E" + i;
      queue.add(List.of(engine), row -> {
        row.accept(engine);
        return Future.failedFuture("down");
      });
    }
    Future<List<String>> report = queue.run(List.of(0, 1, 2, 3, 4), row -> { });
    assertEquals(List.of("E0", "E1", "E2", "E3", "E4"), report.result());
  }
}
