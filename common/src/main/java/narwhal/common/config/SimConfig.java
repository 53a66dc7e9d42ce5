package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * Narwhal's own key, not in the contract: with {@code embedded} true, {@code demo} and
 * {@code serve} start an in-process simulated engine for every {@code engines[]} entry, on that
 * entry's URL port and with its role, so the router can run without GPUs.
 */
public record SimConfig(boolean embedded) {

  static final Set<String> KEYS = Set.of("embedded");

  public static SimConfig defaults() {
    return new SimConfig(false);
  }

  static SimConfig read(SectionReader r) {
    return new SimConfig(r.bool("embedded", defaults().embedded()));
  }

  public JsonObject toJson() {
    return new JsonObject().put("embedded", embedded);
  }
}
