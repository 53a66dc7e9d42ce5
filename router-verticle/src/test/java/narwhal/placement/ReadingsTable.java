package narwhal.placement;

import narwhal.common.bus.LocalPlacement;
import narwhal.common.config.EngineConfig;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A real {@link PlacementTable} for router tests that feed it engines' readings by hand (what {@code LoadReadings}
 * applies after reading an engine's /metrics), on a clock of their own.
 */
public final class ReadingsTable {
  private final AtomicLong now = new AtomicLong(1_000_000);
  private final PlacementTable table;

  public ReadingsTable(List<EngineConfig> engines) {
    table = new PlacementTable(engines, now::get);
  }

  /** A fresh reading of {@code iid}: {@code waiting} requests in its queue, one running. */
  public void reading(String iid, int waiting) {
    table.applyLoad(new EngineLoad(iid, 1, waiting, 0.1, now.incrementAndGet(), "test", null));
  }

  public LocalPlacement.Room room(String model, int queueMax) {
    return table.room(model, queueMax);
  }
}
