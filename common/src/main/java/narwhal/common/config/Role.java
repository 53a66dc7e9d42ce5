package narwhal.common.config;

import java.util.Arrays;
import java.util.List;

/** Which legs of a disaggregated request an engine may serve: prefill, decode, or both. */
public enum Role {
  PREFILL,
  DECODE,
  BOTH;

  static final List<String> WIRE_NAMES = Arrays.stream(values()).map(Role::wireName).toList();

  public boolean canPrefill() {
    return this != DECODE;
  }

  public boolean canDecode() {
    return this != PREFILL;
  }

  /** The name used in the fleet file and on the wire: {@code "prefill"}, {@code "decode"}, {@code "both"}. */
  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  /** The role with this wire name; {@link IllegalArgumentException} for any other text. */
  public static Role parse(String wireName) {
    for (Role role : values()) {
      if (role.wireName().equals(wireName)) {
        return role;
      }
    }
    throw new IllegalArgumentException("unknown role " + wireName + ", expected one of " + WIRE_NAMES);
  }
}
