package narwhal.sim;

import java.util.Arrays;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/** The fault kinds the simulator can inject, by wire name, and which requests each can apply to. */
enum InjectedFault {
  STATUS("status"),
  REFUSE("refuse"),
  RESET("reset"),
  HANG_BEFORE_HEADERS("hang_before_headers"),
  HANG_AFTER_HEADERS("hang_after_headers"),
  METADATA_THEN_OUTPUT("metadata_then_output"),
  DONE_BEFORE_OUTPUT("done_before_output"),
  CLOSE_BEFORE_DONE("close_before_done"),
  SILENCE_AFTER("silence_after"),
  ERROR_IN_STREAM("error_in_stream"),
  DESCRIPTOR_MISSING("descriptor_missing"),
  DESCRIPTOR_NO_ENGINE_ID("descriptor_no_engine_id"),
  DESCRIPTOR_BAD_BLOCK_IDS("descriptor_bad_block_ids"),
  DESCRIPTOR_FOREIGN_CONNECTOR("descriptor_foreign_connector"),
  DESCRIPTOR_WRONG_SIDE_CHANNEL("descriptor_wrong_side_channel"),
  LEASE_EXPIRY("lease_expiry"),
  KV_TRANSFER_FAIL("kv_transfer_fail"),
  HEALTH_503("health_503"),
  SLOW_TOKENS("slow_tokens"),
  QUEUE_FULL("queue_full"),
  ACCEPT_NO_READ("accept_no_read"),
  TRICKLE_HEADERS("trickle_headers"),
  REFUSE_STORM("refuse_storm");

  private static final Map<String, InjectedFault> BY_WIRE =
    Arrays.stream(values()).collect(Collectors.toMap(k -> k.wire, Function.identity()));

  final String wire;

  InjectedFault(String wire) {
    this.wire = wire;
  }

  static InjectedFault fromWire(String wire) {
    InjectedFault kind = wire == null ? null : BY_WIRE.get(wire);
    if (kind == null) {
      throw new IllegalArgumentException("unknown fault kind '" + wire + "', expected one of "
        + Arrays.stream(values()).map(k -> k.wire).collect(Collectors.joining(", ")));
    }
    return kind;
  }

  /** Descriptor and lease faults shape a prefill response, so only a prefill can consume them. */
  boolean prefillOnly() {
    return this == DESCRIPTOR_MISSING || this == DESCRIPTOR_NO_ENGINE_ID || this == DESCRIPTOR_BAD_BLOCK_IDS
      || this == DESCRIPTOR_FOREIGN_CONNECTOR || this == DESCRIPTOR_WRONG_SIDE_CHANNEL || this == LEASE_EXPIRY;
  }

  /** Faults of a TCP connection, applied when the engine accepts it, before any request on it is read. */
  boolean connectionLevel() {
    return this == ACCEPT_NO_READ || this == TRICKLE_HEADERS || this == REFUSE_STORM;
  }

  /** Whether a request of this phase (carrying a KV handoff or not) can consume a rule of this kind. */
  boolean appliesTo(String phase, boolean hasHandoff) {
    if ("tokenize".equals(phase)) {
      return FaultRule.TOKENIZE_KINDS.contains(this);
    }
    if (prefillOnly()) {
      return "prefill".equals(phase);
    }
    if (this == KV_TRANSFER_FAIL) {
      return hasHandoff;
    }
    return this != HEALTH_503 && !connectionLevel();
  }
}
