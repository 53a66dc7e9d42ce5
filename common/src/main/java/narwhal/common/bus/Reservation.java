package narwhal.common.bus;

import io.vertx.core.json.JsonObject;
import narwhal.common.fault.Phase;

/** One engine reserved for one phase of one request, until released by its id. */
public record Reservation(String id, String iid, String url, Phase phase) {

  public JsonObject toJson() {
    return new JsonObject().put("id", id).put("iid", iid).put("url", url).put("phase", phase.wireName());
  }

  public static Reservation fromJson(JsonObject json) {
    return new Reservation(json.getString("id"), json.getString("iid"), json.getString("url"), Phase.parse(json.getString("phase")));
  }
}
