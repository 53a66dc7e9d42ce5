package narwhal.common.config;

import io.vertx.core.json.JsonObject;

/** Small valid fleet files for tests to start from. */
final class Fleets {

  private Fleets() {
  }

  /** Only the required keys: a model and one prefill and one decode engine. */
  static JsonObject minimal() {
    return new JsonObject("""
        {"model": "m",
         "engines": [
           {"iid": "P0", "url": "http://127.0.0.1:8101", "role": "prefill"},
           {"iid": "D0", "url": "http://127.0.0.1:8103", "role": "decode"}]}
        """);
  }

  /** {@link #minimal()} with one section holding the given object. */
  static JsonObject withSection(String section, String sectionJson) {
    return minimal().put(section, new JsonObject(sectionJson));
  }
}
