package narwhal.common.config;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The settings every replica of a cluster must agree on (docs/operations.md#config-drift): each
 * {@code recovery.*} key, {@code serving.max_attempts}, the {@link #PLACEMENT} keys that decide which producer a
 * prompt's prefix or session goes to (replicas that differ never agree on a prefix and share no prefix index), and
 * each engine of the list ({@code engines.<iid>}: its iid, role, model and url). Replicas publish a digest of them — one short hash per key, never the value — and compare
 * digests by key, so a difference is named by its key alone.
 */
public final class SharedSettings {
  /** The key every engine's entry is grouped under in {@link #GROUPS}. */
  public static final String ENGINES = "engines";
  /** The keys digests are compared on, engines grouped as {@value #ENGINES}: a fixed set (metric labels). */
  public static final List<String> GROUPS;
  /** The {@code placement.*} keys the replicas must share. */
  private static final List<Key<PlacementConfig, ?>> PLACEMENT = List.of(PlacementConfig.POLICY, PlacementConfig.SESSION_HEADER,
      PlacementConfig.PREFIX_BLOCK_CHARS, PlacementConfig.PREFIX_BLOCKS);

  static {
    List<String> groups = new ArrayList<>();
    RecoveryConfig.SECTION.keys().stream().filter(k -> !k.retired()).forEach(k -> groups.add("recovery." + k.name()));
    groups.add("serving." + ServingConfig.MAX_ATTEMPTS.name());
    PLACEMENT.forEach(k -> groups.add("placement." + k.name()));
    groups.add(ENGINES);
    GROUPS = List.copyOf(groups);
  }

  private SharedSettings() {
  }

  /** Key → digest (12 hex digits of a SHA-256 of the value), sorted by key. */
  public static Map<String, String> digest(NarwhalConfig config) {
    Map<String, String> out = new TreeMap<>();
    RecoveryConfig recovery = config.recovery();
    for (Key<RecoveryConfig, ?> key : RecoveryConfig.SECTION.keys()) {
      if (!key.retired()) out.put("recovery." + key.name(), hash(String.valueOf(key.jsonOf(recovery))));
    }
    out.put("serving." + ServingConfig.MAX_ATTEMPTS.name(), hash(String.valueOf(config.serving().maxAttempts())));
    for (Key<PlacementConfig, ?> key : PLACEMENT) out.put("placement." + key.name(), hash(String.valueOf(key.jsonOf(config.placement()))));
    for (EngineConfig e : config.engines()) {
      out.put(ENGINES + "." + e.iid(), hash(e.iid() + "\n" + e.role().wireName() + "\n" + e.model() + "\n" + e.url()));
    }
    return out;
  }

  /** The keys whose digests differ between {@code a} and {@code b}, a key held by one side only included; sorted. */
  public static Set<String> differing(Map<String, String> a, Map<String, String> b) {
    Set<String> keys = new TreeSet<>(a.keySet());
    keys.addAll(b.keySet());
    keys.removeIf(k -> a.containsKey(k) && a.get(k).equals(b.get(k)));
    return keys;
  }

  /** The group of {@link #GROUPS} a digest key belongs to ({@code engines.D2} → {@value #ENGINES}). */
  public static String group(String key) {
    return key.startsWith(ENGINES + ".") ? ENGINES : key;
  }

  private static String hash(String value) {
    try {
      byte[] sha = MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(sha, 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
