package narwhal.common.bus;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.fault.Phase;

import java.util.List;

/**
 * Asks placement for an engine for one phase of a request. {@code exclude}: engines this request must not
 * use again; {@code avoid}: an engine to pass over whenever another can take the phase (decode avoids the
 * producer); {@code affinity}: what keeps related requests on one engine ({@code prefix:…} of the prompt's leading
 * blocks, {@code session:…} of the client's session header), null when there is none; {@code model}: the model or LoRA
 * adapter the request names (only engines serving it are candidates), null for any engine; {@code local}: a decode
 * that runs the whole request on one {@code both} engine, with no remote prefill (placement reason {@code local}).
 */
public record ReserveRequest(String rid, Phase phase, List<String> exclude, String avoid, String affinity, String model,
                             boolean local) {

  public ReserveRequest(String rid, Phase phase, List<String> exclude, String avoid, String affinity, String model) {
    this(rid, phase, exclude, avoid, affinity, model, false);
  }

  public ReserveRequest(String rid, Phase phase, List<String> exclude, String avoid) {
    this(rid, phase, exclude, avoid, null, null);
  }

  public ReserveRequest(String rid, Phase phase, List<String> exclude, String avoid, String affinity) {
    this(rid, phase, exclude, avoid, affinity, null);
  }

  public JsonObject toJson() {
    return new JsonObject().put("rid", rid).put("phase", phase.wireName()).put("exclude", new JsonArray(List.copyOf(exclude)))
        .put("avoid", avoid).put("affinity", affinity).put("model", model).put("local", local);
  }

  public static ReserveRequest fromJson(JsonObject json) {
    JsonArray exclude = json.getJsonArray("exclude", new JsonArray());
    return new ReserveRequest(json.getString("rid"), Phase.parse(json.getString("phase")),
        exclude.stream().map(String::valueOf).toList(), json.getString("avoid"), json.getString("affinity"),
        json.getString("model"), Boolean.TRUE.equals(json.getValue("local")));
  }
}
