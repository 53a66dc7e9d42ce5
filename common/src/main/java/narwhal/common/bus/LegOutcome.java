package narwhal.common.bus;

import io.vertx.core.json.JsonObject;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;

/**
 * What one leg proved about one engine, sent fire-and-forget to the breaker: a success of a phase, or a
 * failure of a breaker class. {@code producerIid} names the original producer of a failed crossed decode,
 * which the inference probe reuses.
 */
public record LegOutcome(String iid, Phase phase, boolean success, FailureClass failureClass, String reason,
                         String producerIid, boolean quarantine) {

  /** Sent as the record itself on the local bus; a {@link JsonObject} body of the same fields is read alike. */
  public static final RecordCodec<LegOutcome> CODEC = new RecordCodec<>(LegOutcome.class, LegOutcome::toJson, LegOutcome::fromJson);

  public static LegOutcome success(String iid, Phase phase) {
    return new LegOutcome(iid, phase, true, null, null, null, false);
  }

  public JsonObject toJson() {
    return new JsonObject().put("iid", iid).put("phase", phase.wireName()).put("success", success)
        .put("class", failureClass == null ? null : failureClass.wireName()).put("reason", reason)
        .put("producer_iid", producerIid).put("quarantine", quarantine);
  }

  /** A message body as sent: the record, or its JSON. */
  public static LegOutcome of(Object body) {
    return body instanceof LegOutcome outcome ? outcome : fromJson((JsonObject) body);
  }

  public static LegOutcome fromJson(JsonObject json) {
    String cls = json.getString("class");
    return new LegOutcome(json.getString("iid"), Phase.parse(json.getString("phase")), json.getBoolean("success", false),
        cls == null ? null : FailureClass.parse(cls), json.getString("reason"), json.getString("producer_iid"),
        json.getBoolean("quarantine", false));
  }
}
