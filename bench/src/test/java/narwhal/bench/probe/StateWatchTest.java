package narwhal.bench.probe;

import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.process.ClusterReplicas;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StateWatchTest {

  private static JsonObject state(String d0) {
    return new JsonObject().put("engines", new JsonArray().add(new JsonObject().put("iid", "D0").put("state", d0)));
  }

  @Test
  void eachSightingBracketsTheInstantTheStateChangedOnThatReplica() {
    try (LoadGenerator load = new LoadGenerator()) {
      List<AtomicReference<JsonObject>> states = new ArrayList<>();
      List<HttpWork> replicas = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        AtomicReference<JsonObject> state = new AtomicReference<>(state("serving"));
        HttpServer server = LoadGenerator.join(load.vertx().createHttpServer()
            .requestHandler(req -> req.response().end(state.get().toBuffer())).listen(0, "127.0.0.1"), 10);
        states.add(state);
        replicas.add(new HttpWork(load.vertx(), load.client(4), "127.0.0.1", server.actualPort()));
      }
      try (StateWatch watch = new StateWatch(load.vertx(), replicas).start()) {
        StateWatch.Wait ejected = watch.when(s -> "ejected".equals(ClusterReplicas.engineState(s, "D0")), 2);
        long[] flippedAfter = new long[2];
        long[] flippedBefore = new long[2];
        for (int i = 0; i < 2; i++) {
          JvmProbe.sleep(30);
          flippedAfter[i] = System.nanoTime();
          states.get(i).set(state("ejected"));
          flippedBefore[i] = System.nanoTime();
        }
        List<StateWatch.Sighting> seen = ejected.await(10_000);
        for (int i = 0; i < 2; i++) {
          StateWatch.Sighting s = seen.get(i);
          assertTrue(s.afterNanos() <= flippedBefore[i], "replica " + i + ": bracket opens after the change");
          assertTrue(s.beforeNanos() >= flippedAfter[i], "replica " + i + ": bracket closes before the change");
          assertTrue(ejected.seenOn(i));
        }
        assertNull(seen.get(2), "the skipped replica is not awaited");
        assertFalse(ejected.seenOn(2));
        assertTrue(watch.roundTrips().count() > 0);
        assertEquals("ejected", ClusterReplicas.engineState(states.get(0).get(), "D0"));
      }
    }
  }
}
