package narwhal.launcher;

import com.hazelcast.nio.ObjectDataInput;
import com.hazelcast.nio.ObjectDataOutput;
import com.hazelcast.spi.merge.MergingValue;
import com.hazelcast.spi.merge.SplitBrainMergePolicy;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.ClockBound;
import narwhal.common.bus.StateVersion;

/**
 * How {@code narwhal.engine-state} heals after a split brain (docs/operations.md#partitions): of the two sides' entries
 * for a key (an engine's state, the fleet hold) the map keeps the one with the newer {@link StateVersion}
 * ({@code changed_ms}, then {@code origin}), the rule every replica's breaker writes by, so the newest decision about
 * each engine survives the merge whichever side's map Hazelcast keeps. An entry that carries no version loses to one
 * that does (as does one further ahead of this member's clock than {@link ClockBound} allows: forged); of two without,
 * the surviving side's stays.
 */
public final class NewestStateMergePolicy implements SplitBrainMergePolicy<Object, MergingValue<Object>, Object> {
  @Override
  public Object merge(MergingValue<Object> merging, MergingValue<Object> existing) {
    if (existing == null) return merging.getRawValue();
    if (merging == null) return existing.getRawValue();
    StateVersion incoming = version(merging.getValue());
    if (incoming == null) return existing.getRawValue();
    StateVersion held = version(existing.getValue());
    return held == null || incoming.newerThan(held) ? merging.getRawValue() : existing.getRawValue();
  }

  /** The version a state map entry carries, or null when it is not a versioned JSON entry. */
  static StateVersion version(Object value) {
    if (!(value instanceof String text)) return null;
    try {
      JsonObject json = new JsonObject(text);
      if (!(json.getValue("changed_ms") instanceof Number changed) || !(json.getValue("origin") instanceof String origin)
          || ClockBound.ahead(changed.longValue(), System.currentTimeMillis())) {
        return null;
      }
      return new StateVersion(changed.longValue(), origin);
    } catch (RuntimeException malformed) {
      return null;
    }
  }

  @Override
  public void writeData(ObjectDataOutput out) {
    // stateless
  }

  @Override
  public void readData(ObjectDataInput in) {
    // stateless
  }
}
