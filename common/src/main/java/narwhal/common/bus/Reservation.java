package narwhal.common.bus;

import io.vertx.core.json.JsonObject;
import narwhal.common.fault.Phase;

/**
 * One engine reserved for one phase of one request, until released by its id; {@code reason} says why placement chose
 * it ({@code prefix}, {@code session}, {@code spill}, {@code load}, {@code least_reserved}, {@code only_candidate}, {@code local}: the whole request on one {@code both} engine).
 */
public record Reservation(String id, String iid, String url, Phase phase, String reason) {
  public static final String LEAST_RESERVED = "least_reserved";
  public static final String LOCAL = "local";

  public Reservation(String id, String iid, String url, Phase phase) {
    this(id, iid, url, phase, LEAST_RESERVED);
  }

  public JsonObject toJson() {
    return new JsonObject().put("id", id).put("iid", iid).put("url", url).put("phase", phase.wireName()).put("reason", reason);
  }

  public static Reservation fromJson(JsonObject json) {
    return new Reservation(json.getString("id"), json.getString("iid"), json.getString("url"), Phase.parse(json.getString("phase")),
        json.getString("reason", LEAST_RESERVED));
  }
}
