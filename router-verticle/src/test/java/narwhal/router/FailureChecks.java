package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;

import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Assertions the failure-semantics tests share: the one journal row of a request, reservations back to
 * zero, engines with no leg left running, and client-facing messages that name no engine address.
 * Waiting is done with Vert.x timers and a bound, never by sleeping the test thread for a fixed time.
 * HTTP exchanges go through {@link RouterHarness}, which wires them on a Vert.x context.
 */
final class FailureChecks {
  private FailureChecks() {
  }

  static RouterHarness.Reply post(RouterHarness h, String path, JsonObject body) {
    return h.post(path, body);
  }

  static RouterHarness.Reply get(RouterHarness h, String path) {
    return h.get(path);
  }

  static RouterHarness.Reply direct(RouterHarness h, narwhal.sim.SimEngine engine, String path, JsonObject body) {
    return h.direct(engine, path, body);
  }

  /** Starts a POST and returns at once: for requests that must be in flight together. */
  static Future<RouterHarness.Reply> postAsync(RouterHarness h, String path, JsonObject body) {
    return h.postAsync(path, body);
  }

  /** Runs {@code action} on a Vert.x context (so HTTP callbacks are wired before any event can arrive). */
  static void onContext(RouterHarness h, Runnable action) {
    h.vertx.getOrCreateContext().runOnContext(v -> action.run());
  }

  /** Reservations placement holds now, asked on the local bus (no HTTP exchange involved). */
  static int reservations(RouterHarness h) {
    return RouterHarness.await(h.vertx.eventBus().<JsonObject>request(narwhal.common.bus.Addresses.PLACEMENT_STATE, new JsonObject()))
        .body().getInteger("reservations");
  }

  /** Polls {@code condition} every 20 ms until it holds or 10 s have passed; then asserts it. */
  static void eventually(RouterHarness h, BooleanSupplier condition, Supplier<String> what) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        assertTrue(condition.getAsBoolean(), what.get());
        return;
      }
      RouterHarness.await(Future.<Void>future(p -> h.vertx.setTimer(20, t -> p.complete())));
    }
  }

  static List<JsonObject> rows(RouterHarness h) {
    try {
      return Files.readAllLines(h.journal).stream().filter(l -> !l.isBlank()).map(JsonObject::new).toList();
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  /** The journal row of {@code rid}, asserting there is exactly one. */
  static JsonObject rowFor(RouterHarness h, String rid) {
    eventually(h, () -> rows(h).stream().anyMatch(r -> rid.equals(r.getString("rid"))), () -> "no journal row for " + rid);
    List<JsonObject> mine = rows(h).stream().filter(r -> rid.equals(r.getString("rid"))).toList();
    assertEquals(1, mine.size(), "exactly one journal row for " + rid + ": " + mine);
    return RouterHarness.checkedTiming(mine.get(0));
  }

  /** Placement holds no reservation, and no engine still runs or queues a leg (the router closed them all). */
  static void allReleased(RouterHarness h) {
    eventually(h, () -> reservations(h) == 0, () -> "reservations leaked: " + reservations(h));
    for (SimEngine e : h.engines.values()) {
      eventually(h, () -> e.stats().getLong("running") == 0 && e.stats().getLong("waiting") == 0,
          () -> e.name() + " still runs a leg: " + e.stats());
    }
  }

  /** A client-facing text names no engine host, port or URL. */
  static void namesNoEngine(RouterHarness h, String text) {
    assertFalse(text.contains("127.0.0.1"), text);
    assertFalse(text.contains("localhost"), text);
    assertFalse(text.contains("http://"), text);
    for (SimEngine e : h.engines.values()) {
      assertFalse(names(text, e.port()), "engine port in: " + text);
      assertFalse(names(text, e.sideChannelPort()), "side-channel port in: " + text);
    }
  }

  /**
   * Whether {@code text} holds {@code port} as a number of its own: not within a longer run of letters and digits (a
   * completion id, a timestamp), where its digits turn up by chance (CI: a side-channel port 43904 "found" in the id
   * {@code cmpl-43904541-…}).
   */
  static boolean names(String text, int port) {
    return java.util.regex.Pattern.compile("(?<![0-9A-Za-z])" + port + "(?![0-9A-Za-z])").matcher(text).find();
  }
}
