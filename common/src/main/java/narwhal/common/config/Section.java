package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The keys of one JSON object of the fleet file, in the order they are written: what the object may hold (any other
 * name is refused as an unknown key) and how a record of it is written back.
 *
 * @param <R> the record the object is read into
 */
public final class Section<R> {
  private final List<Key<R, ?>> keys;
  private final Set<String> names;

  @SafeVarargs
  Section(Key<R, ?>... keys) {
    this.keys = List.of(keys);
    this.names = this.keys.stream().map(Key::name).collect(Collectors.toUnmodifiableSet());
  }

  /** Every key, retired ones included, in file order. */
  public List<Key<R, ?>> keys() {
    return keys;
  }

  Set<String> names() {
    return names;
  }

  /** Every key of {@code record} but the retired ones, in declaration order. */
  JsonObject toJson(R record) {
    JsonObject json = new JsonObject();
    for (Key<R, ?> key : keys) {
      if (!key.retired()) json.put(key.name(), key.jsonOf(record));
    }
    return json;
  }
}
