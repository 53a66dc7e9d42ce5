package narwhal.common.bus;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.fault.Phase;

import java.util.List;

/**
 * Asks placement for an engine for one phase of a request. {@code exclude}: engines this request must not
 * use again; {@code avoid}: an engine to pass over whenever another can take the phase (decode avoids the
 * producer).
 */
public record ReserveRequest(String rid, Phase phase, List<String> exclude, String avoid) {

  public JsonObject toJson() {
    return new JsonObject().put("rid", rid).put("phase", phase.wireName()).put("exclude", new JsonArray(List.copyOf(exclude)))
        .put("avoid", avoid);
  }

  public static ReserveRequest fromJson(JsonObject json) {
    JsonArray exclude = json.getJsonArray("exclude", new JsonArray());
    return new ReserveRequest(json.getString("rid"), Phase.parse(json.getString("phase")),
        exclude.stream().map(String::valueOf).toList(), json.getString("avoid"));
  }
}
