package narwhal.common.config;

import java.util.Arrays;
import java.util.List;

/**
 * How ejected engines come back (docs/operations.md#whole-wave-runbook): one at a time, or only together after an
 * operator's {@code wave-restart}, for fleets whose engines must be restarted as a whole.
 */
public enum RestartPolicy {
  INDIVIDUAL,
  WHOLE_WAVE;

  static final List<String> WIRE_NAMES = Arrays.stream(values()).map(RestartPolicy::wireName).toList();

  /** {@code "individual"} or {@code "whole_wave"}, as written in the fleet file. */
  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  /** The policy with this wire name; {@link IllegalArgumentException} for any other text. */
  public static RestartPolicy parse(String wireName) {
    for (RestartPolicy policy : values()) {
      if (policy.wireName().equals(wireName)) {
        return policy;
      }
    }
    throw new IllegalArgumentException(
        "unknown restart policy " + wireName + ", expected one of " + WIRE_NAMES);
  }
}
