package narwhal.launcher;

import com.hazelcast.nio.ObjectDataInput;
import com.hazelcast.nio.ObjectDataOutput;
import com.hazelcast.spi.merge.MergingValue;
import com.hazelcast.spi.merge.SplitBrainMergePolicy;

/**
 * How maps of numbers heal after a split brain (docs/operations.md#partitions): of the two sides' entries for a key
 * the larger number stays: for the breaker's failure streaks (Vert.x counters, map {@code __vertx.map.counter}) the
 * longer streak, so failures either side counted are not forgotten (a success resets the streak cluster-wide). An entry that is not
 * a number loses to one that is; of two that are not, the surviving side's stays.
 */
public final class LargerNumberMergePolicy implements SplitBrainMergePolicy<Object, MergingValue<Object>, Object> {
  @Override
  public Object merge(MergingValue<Object> merging, MergingValue<Object> existing) {
    if (existing == null) return merging.getRawValue();
    if (merging == null) return existing.getRawValue();
    Long incoming = number(merging.getValue());
    Long held = number(existing.getValue());
    if (incoming == null) return existing.getRawValue();
    if (held == null) return merging.getRawValue();
    return incoming > held ? merging.getRawValue() : existing.getRawValue();
  }

  private static Long number(Object value) {
    return value instanceof Number n ? n.longValue() : null;
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
