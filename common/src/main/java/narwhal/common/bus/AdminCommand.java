package narwhal.common.bus;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The admin commands of docs/operations.md#admin-commands, as the {@code narwhal admin} command line sends them and the breaker serves them
 * on {@link Addresses#ADMIN} ({@code {"command": wire name, "args": {...}, "proof": {...}}}, see {@link AdminProof}).
 */
public enum AdminCommand {
  STATE("state", false, false),
  EJECT("eject", true, true),
  READMIT("readmit", true, true),
  QUARANTINE("quarantine", true, true),
  DRAIN("drain", true, true),
  UNDRAIN("undrain", true, true),
  WAVE_RESTART("wave-restart", false, true),
  RELOAD_CONFIG("reload-config", false, true);

  private final String wireName;
  private final boolean aboutEngine;
  private final boolean needsToken;

  AdminCommand(String wireName, boolean aboutEngine, boolean needsToken) {
    this.wireName = wireName;
    this.aboutEngine = aboutEngine;
    this.needsToken = needsToken;
  }

  public String wireName() {
    return wireName;
  }

  /** Whether the command names one engine ({@code args.iid}). */
  public boolean aboutEngine() {
    return aboutEngine;
  }

  /** Whether the command changes state, so needs the admin token. */
  public boolean needsToken() {
    return needsToken;
  }

  public static Optional<AdminCommand> parse(String wireName) {
    return Arrays.stream(values()).filter(c -> c.wireName.equals(wireName)).findFirst();
  }

  public static List<String> wireNames() {
    return Arrays.stream(values()).map(AdminCommand::wireName).toList();
  }
}
