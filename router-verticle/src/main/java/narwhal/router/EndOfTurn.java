package narwhal.router;

import io.vertx.core.Context;

import java.util.ArrayList;
import java.util.List;

/**
 * Runs actions once at the end of the current turn of one event loop, after the reads of that turn: one task per
 * turn for every stream of the loop that has frames to write ({@link SseRelay}), instead of one task per stream.
 * Confined to its event loop.
 */
final class EndOfTurn {
  private final Context context;
  private List<Runnable> due = new ArrayList<>();
  private List<Runnable> spare = new ArrayList<>();
  private boolean scheduled;

  EndOfTurn(Context context) {
    this.context = context;
  }

  void add(Runnable action) {
    due.add(action);
    if (!scheduled) {
      scheduled = true;
      context.runOnContext(v -> run());
    }
  }

  private void run() {
    scheduled = false;
    List<Runnable> now = due;
    due = spare;
    for (Runnable action : now) action.run();
    now.clear();
    spare = now;
  }
}
