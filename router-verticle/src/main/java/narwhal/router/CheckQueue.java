package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Runs preflight's checks a few at a time, never two on the same engine at once: an engine being checked is not
 * handed a second check's request (a small engine's queue would refuse it, and the check would fail for the checker's
 * own haste). Each check reports its rows as they come; the report keeps them in the order the checks were added,
 * whatever order they ran in. Single-use, on one Vert.x context.
 *
 * @param <R> a report row
 */
final class CheckQueue<R> {
  private record Check<R>(int index, Set<String> engines, Function<Consumer<R>, Future<?>> run) {
  }

  private final int atOnce;
  private final List<Check<R>> added = new ArrayList<>();
  private final List<List<R>> rows = new ArrayList<>();
  private final LinkedList<Check<R>> pending = new LinkedList<>();
  private final Set<String> busy = new HashSet<>();
  private final Promise<List<R>> done = Promise.promise();
  private Consumer<R> progress;
  private int running;
  private boolean filling;
  private boolean fillAgain;

  CheckQueue(int atOnce) {
    this.atOnce = atOnce;
  }

  /** Adds a check that holds {@code engines} while it runs. */
  void add(Collection<String> engines, Function<Consumer<R>, Future<?>> run) {
    added.add(new Check<>(added.size(), Set.copyOf(engines), run));
    rows.add(new ArrayList<>());
  }

  /** How many checks were added. */
  int size() {
    return added.size();
  }

  /**
   * Runs the checks in {@code order} (indexes in the added order) as far as engines allow: a check waits while one of
   * its engines is busy, later ones free of them go first. Reports each row to {@code progress}; completes with every
   * row in the added order.
   */
  Future<List<R>> run(List<Integer> order, Consumer<R> progress) {
    this.progress = progress;
    order.forEach(i -> pending.add(added.get(i)));
    if (pending.isEmpty()) done.complete(List.of());
    else fill();
    return done.future();
  }

  private void fill() {
    if (filling) {
      fillAgain = true;
      return;
    }
    filling = true;
    do {
      fillAgain = false;
      startFree();
    } while (fillAgain);
    filling = false;
  }

  private void startFree() {
    for (Iterator<Check<R>> it = pending.iterator(); it.hasNext() && running < atOnce; ) {
      Check<R> check = it.next();
      if (check.engines().stream().anyMatch(busy::contains)) continue;
      it.remove();
      busy.addAll(check.engines());
      running++;
      check.run().apply(row -> {
        rows.get(check.index()).add(row);
        progress.accept(row);
      }).onComplete(ar -> finished(check));
    }
  }

  private void finished(Check<R> check) {
    busy.removeAll(check.engines());
    running--;
    if (!pending.isEmpty()) {
      fill();
    } else if (running == 0) {
      List<R> all = new ArrayList<>();
      rows.forEach(all::addAll);
      done.complete(all);
    }
  }
}
