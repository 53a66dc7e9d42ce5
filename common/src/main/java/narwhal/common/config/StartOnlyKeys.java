package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The fleet-file keys a replica reads only at start (declared {@link Key#readAtStart()}; docs/configuration.md marks
 * them "no (read at start)"): a hot reload that changes one of them cannot apply it, so the change is reported as
 * waiting for a restart (log, {@code /narwhal/state} {@code restart_pending}, {@code narwhal_config_restart_pending})
 * instead of passing as applied.
 */
public final class StartOnlyKeys {

  private StartOnlyKeys() {
  }

  public static boolean startOnly(String key) {
    Key<?, ?> declared = ConfigKeys.get(key);
    return declared != null && declared.startOnly();
  }

  /** The start-only keys whose values differ between the two configurations, in file order. */
  public static List<String> changed(NarwhalConfig running, NarwhalConfig next) {
    return changedKeys(running, next).stream().filter(StartOnlyKeys::startOnly).toList();
  }

  /** Every key whose value differs between the two configurations ({@code engines} and objects as one key each). */
  public static List<String> changedKeys(NarwhalConfig a, NarwhalConfig b) {
    List<String> out = new ArrayList<>();
    diff(a.toJson(), b.toJson(), "", out);
    return out;
  }

  private static void diff(JsonObject a, JsonObject b, String prefix, List<String> out) {
    Set<String> names = new java.util.LinkedHashSet<>(a.fieldNames());
    names.addAll(b.fieldNames());
    for (String name : names) {
      Object x = a.getValue(name);
      Object y = b.getValue(name);
      String key = prefix.isEmpty() ? name : prefix + "." + name;
      boolean sections = x instanceof JsonObject && y instanceof JsonObject && !"engine_contract".equals(key);
      if (sections) {
        diff((JsonObject) x, (JsonObject) y, key, out);
      } else if (!Objects.equals(normal(x), normal(y))) {
        out.add(key);
      }
    }
  }

  private static Object normal(Object v) {
    if (v instanceof Number n) return n.doubleValue();
    if (v instanceof JsonArray arr) return arr.encode();
    if (v instanceof JsonObject o) return o.encode();
    return v;
  }
}
