package narwhal.bench.probe;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.json.JsonObject;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.process.EngineFleet;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How many times each simulated engine has been read on the paths routers poll ({@code /metrics}, {@code /health},
 * {@code /v1/models}): the simulator's own counters ({@code /sim/stats} {@code reads}), swept over every engine at once.
 * Two sweeps give each engine's reads per second in between ({@link #since}); the time between them runs from the
 * middle of one sweep to the middle of the other.
 */
public final class EngineReads {
  /** The paths counted, as {@code /sim/stats} names them. */
  public static final List<String> PATHS = List.of("metrics", "health", "models");
  private static final long STATS_TIMEOUT_MS = 30_000;

  private final Map<String, JsonObject> byEngine;
  private final long midNanos;

  private EngineReads(Map<String, JsonObject> byEngine, long midNanos) {
    this.byEngine = byEngine;
    this.midNanos = midNanos;
  }

  /** Reads every engine's counters, all at once on the load generator's event loops (never call on an event loop). */
  public static EngineReads sweep(LoadGenerator load, HttpClientAgent client, EngineFleet fleet) {
    long t0 = System.nanoTime();
    Promise<Map<String, JsonObject>> swept = Promise.promise();
    load.vertx().runOnContext(v -> {
      List<Future<JsonObject>> reads = new ArrayList<>();
      for (EngineFleet.Engine e : fleet.list()) {
        reads.add(new HttpWork(load.vertx(), client, "127.0.0.1", e.port()).get("/sim/stats", STATS_TIMEOUT_MS).map(reply -> {
          if (reply.status() != 200) throw new IllegalStateException(e.name() + " /sim/stats: " + reply.status() + " " + reply.body());
          return reply.body().toJsonObject().getJsonObject("reads");
        }));
      }
      Future.all(reads).map(all -> {
        Map<String, JsonObject> out = new LinkedHashMap<>();
        for (int i = 0; i < reads.size(); i++) out.put(fleet.list().get(i).name(), reads.get(i).result());
        return out;
      }).onComplete(swept);
    });
    Map<String, JsonObject> byEngine = LoadGenerator.join(swept.future(), STATS_TIMEOUT_MS / 1000.0 + 5);
    return new EngineReads(byEngine, t0 + (System.nanoTime() - t0) / 2);
  }

  /** One path's reads between two sweeps: per engine per second, mean and most, and the most reads one engine had. */
  public record Rate(double mean, double max, long maxCount, String busiest) {
  }

  /** Seconds from {@code before}'s sweep to this one's. */
  public double secondsSince(EngineReads before) {
    return (midNanos - before.midNanos) / 1e9;
  }

  /** Per path of {@link #PATHS}: the reads each engine received from {@code before}'s sweep to this one. */
  public Map<String, Rate> since(EngineReads before) {
    double seconds = secondsSince(before);
    Map<String, Rate> out = new LinkedHashMap<>();
    for (String path : PATHS) {
      long total = 0;
      long most = -1;
      String busiest = null;
      for (Map.Entry<String, JsonObject> e : byEngine.entrySet()) {
        long n = e.getValue().getLong(path) - before.byEngine.get(e.getKey()).getLong(path);
        total += n;
        if (n > most) {
          most = n;
          busiest = e.getKey();
        }
      }
      out.put(path, new Rate(total / seconds / byEngine.size(), most / seconds, most, busiest));
    }
    return out;
  }
}
