package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Reservation;
import narwhal.common.fault.EngineFault;
import narwhal.common.fault.RequestOutcome;
import narwhal.common.fault.RetryReason;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The one request row of the journal (docs/operations.md#journal), built the same way for every ending: a request
 * refused at the edge and one its {@link RequestLifecycle} ended have the same fields, in the same order, those a step
 * never reached null (counts 0). Also each {@code attempt_failures[]} entry.
 */
final class JournalRow {
  private final JsonObject row;
  private final long arrivedNanos;

  JournalRow(String rid, String clientRid, String endpoint, Instant arrived, long arrivedNanos) {
    this.arrivedNanos = arrivedNanos;
    this.row = new JsonObject().put("rid", rid).put("client_rid", clientRid).put("model", null).put("endpoint", endpoint)
        .put("tenant", null).put("class", null)
        .put("arrived", arrived.toString()).put("terminal", null).put("reason", null).put("status", null).put("error_type", null)
        .put("queued_s", null).put("ttft_s", null).put("first_byte_s", null).put("prefill_iid", null).put("decode_iid", null)
        .put("prefill_placement", null).put("decode_placement", null).put("crossed", null).put("attempts", 0)
        .put("attempt_failures", new JsonArray()).put("output_len", 0).put("handoffs_left", 0)
        .put("prompt_tokens", null).put("completion_tokens", null).put("cached_tokens", null).put("prefill_cached_tokens", null)
        .put("trace_id", null)
        .put("duration_s", null);
  }

  JournalRow ending(RequestOutcome terminal, String reason, int status, String errorType) {
    row.put("terminal", terminal.wireName()).put("reason", reason).put("status", status).put("error_type", errorType);
    return this;
  }

  /** The tenant the request counted as and its priority class (null: refused before it was known). */
  JournalRow tenant(Admission.Lane lane) {
    if (lane != null) row.put("tenant", lane.tenant().name()).put("class", lane.tenant().priorityClass());
    return this;
  }

  JournalRow model(String model) {
    row.put("model", model);
    return this;
  }

  /** Arrival to the end of the prefill and to the first output, in nanoseconds; negative: not reached. */
  JournalRow timing(long ttftNanos, long firstByteNanos) {
    row.put("ttft_s", seconds(ttftNanos)).put("first_byte_s", seconds(firstByteNanos));
    return this;
  }

  /** How long its attempts waited for turns in the router's queue, in nanoseconds; negative: none asked for one. */
  JournalRow queued(long queuedNanos) {
    row.put("queued_s", seconds(queuedNanos));
    return this;
  }

  /** The final attempt's engines (null: a leg not placed) and why placement chose them. */
  JournalRow engines(Reservation producer, Reservation consumer) {
    row.put("prefill_iid", producer == null ? null : producer.iid()).put("decode_iid", consumer == null ? null : consumer.iid())
        .put("prefill_placement", producer == null ? null : producer.reason())
        .put("decode_placement", consumer == null ? null : consumer.reason())
        .put("crossed", producer == null || consumer == null ? null : !consumer.iid().equals(producer.iid()));
    return this;
  }

  JournalRow attempts(int attempts, List<JsonObject> failures) {
    row.put("attempts", attempts).put("attempt_failures", new JsonArray(new ArrayList<>(failures)));
    return this;
  }

  JournalRow output(long outputLength, int handoffsLeft) {
    row.put("output_len", outputLength).put("handoffs_left", handoffsLeft);
    return this;
  }

  /** The engine's usage of a completed request, null when it sent none. */
  JournalRow usage(JsonObject usage) {
    row.put("prompt_tokens", count(usage, "prompt_tokens")).put("completion_tokens", count(usage, "completion_tokens"))
        .put("cached_tokens", usage != null && usage.getValue("prompt_tokens_details") instanceof JsonObject details
            ? count(details, "cached_tokens") : null);
    return this;
  }

  /** The prompt tokens the final attempt's producer served from its prefix cache, as its prefill answer reported. */
  JournalRow prefillCached(Integer cachedTokens) {
    row.put("prefill_cached_tokens", cachedTokens);
    return this;
  }

  JournalRow traceId(String traceId) {
    row.put("trace_id", traceId);
    return this;
  }

  /** The row, its {@code duration_s} ending now. */
  JsonObject done() {
    return row.put("duration_s", (System.nanoTime() - arrivedNanos) / 1e9);
  }

  /** One failed attempt, as {@code attempt_failures[]} lists it; {@code backoffS} null when no retry follows. */
  static JsonObject attemptFailure(int attempt, EngineFault fault, Reservation producer, Reservation consumer,
      boolean transientFault, boolean outputStarted, RetryReason retry, Double backoffS) {
    return new JsonObject().put("attempt", attempt).put("phase", fault.phase().wireName())
        .put("reason", fault.kind().reason()).put("prefill_iid", producer == null ? null : producer.iid())
        .put("decode_iid", consumer == null ? null : consumer.iid()).put("status", fault.status())
        .put("transient", transientFault).put("output_started", outputStarted).put("retry_reason", retry.wireName())
        .put("backoff_s", backoffS).put("error_message", fault.detail());
  }

  /** A usage count, null when absent. */
  static Integer count(JsonObject usage, String field) {
    return usage != null && usage.getValue(field) instanceof Number n ? n.intValue() : null;
  }

  private static Double seconds(long nanos) {
    return nanos < 0 ? null : nanos / 1e9;
  }
}
