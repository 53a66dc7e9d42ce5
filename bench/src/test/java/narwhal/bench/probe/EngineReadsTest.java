package narwhal.bench.probe;

import io.vertx.core.http.HttpClientAgent;
import narwhal.bench.load.HttpWork;
import narwhal.bench.load.LoadGenerator;
import narwhal.bench.process.SimBench;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two sweeps of real simulated engines' counters tell each engine's reads between them, per path. */
class EngineReadsTest {
  private SimBench fleet;
  private LoadGenerator load;
  private HttpClientAgent client;

  @BeforeEach
  void start() {
    fleet = SimBench.start(List.of(SimBench.engine("P0", "prefill"), SimBench.engine("D0", "decode"), SimBench.engine("D1", "decode")));
    load = new LoadGenerator();
    client = load.client(1);
  }

  @AfterEach
  void stop() {
    load.close();
    fleet.close();
  }

  private void read(String engine, String path) {
    int port = fleet.engine(engine).port();
    assertEquals(200, new HttpWork(load.vertx(), client, "127.0.0.1", port).getBlocking(path, 5_000).status());
  }

  @Test
  void readsBetweenTwoSweepsArePerEnginePerPath() {
    read("D1", "/metrics");
    EngineReads before = EngineReads.sweep(load, client, fleet);
    read("D0", "/metrics");
    read("D0", "/metrics");
    read("P0", "/metrics");
    read("D1", "/health");
    read("P0", "/v1/models");
    read("P0", "/ping");
    EngineReads after = EngineReads.sweep(load, client, fleet);

    double seconds = after.secondsSince(before);
    assertTrue(seconds > 0, "the second sweep is later: " + seconds);
    Map<String, EngineReads.Rate> rates = after.since(before);
    assertEquals(EngineReads.PATHS, List.copyOf(rates.keySet()));
    EngineReads.Rate metrics = rates.get("metrics");
    assertEquals(2, metrics.maxCount());
    assertEquals("D0", metrics.busiest());
    assertEquals(3.0, metrics.mean() * seconds * 3, 1e-9);
    assertEquals(2.0, metrics.max() * seconds, 1e-9);
    assertEquals(1, rates.get("health").maxCount());
    assertEquals("D1", rates.get("health").busiest());
    assertEquals(1, rates.get("models").maxCount());
    assertEquals("P0", rates.get("models").busiest());
  }
}
