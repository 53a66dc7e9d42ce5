package narwhal.common.auth;

import narwhal.common.config.ConfigException;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The secrets a caller may present (client API keys, the ops token, the admin token), compared in constant time:
 * a presented value is hashed and its digest compared with every key's digest with {@link MessageDigest#isEqual},
 * without stopping at the first match, so neither a key's content nor its length nor which key matched shows in
 * the time taken. An empty set is "open": every request is let through.
 */
public final class BearerKeys {
  private static final BearerKeys OPEN = new BearerKeys(List.of());
  private final List<byte[]> digests;

  private BearerKeys(List<byte[]> digests) {
    this.digests = digests;
  }

  public static BearerKeys open() {
    return OPEN;
  }

  public static BearerKeys of(Collection<String> keys) {
    List<byte[]> digests = new ArrayList<>();
    for (String key : keys) digests.add(digest(key));
    return new BearerKeys(List.copyOf(digests));
  }

  /**
   * The keys {@code source} holds, read through {@code secrets}: comma-separated or one per line, blanks around a key
   * dropped; none configured is open. A named file or variable that is missing, unreadable or holds no key is refused
   * naming its config key: an operator who asked for keys never gets an open router by mistake.
   */
  public static BearerKeys from(narwhal.common.config.SecretRef source, UnaryOperator<String> secrets) {
    if (!source.configured()) return OPEN;
    List<String> keys = split(secrets.apply(source.lookupName()));
    if (keys.isEmpty()) {
      String what = source.file().isEmpty() ? "is not set" : "is missing, unreadable";
      throw new ConfigException(source.key(), source.key() + ": " + source.describe() + " " + what
          + " or holds no key: expected one or more comma-separated keys");
    }
    return of(keys);
  }

  /** The comma-separated keys of {@code value}, trimmed, empty ones dropped; none for null. */
  public static List<String> split(String value) {
    List<String> keys = new ArrayList<>();
    if (value == null) return keys;
    for (String part : value.split("[,\n]")) {
      if (!part.isBlank()) keys.add(part.strip());
    }
    return keys;
  }

  public boolean isOpen() {
    return digests.isEmpty();
  }

  /** True when open, or when {@code authorization} is {@code Bearer <one of the keys>} (scheme case-insensitive). */
  public boolean admits(String authorization) {
    if (isOpen()) return true;
    String key = token(authorization);
    return key != null && matches(key);
  }

  /** The key of {@code Bearer <key>} (scheme case-insensitive, blanks around the key dropped), or null. */
  public static String token(String authorization) {
    if (authorization == null || authorization.length() < 7 || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return null;
    }
    return authorization.substring(7).strip();
  }

  /** True when {@code given} is one of the keys; never true when open (there is nothing to match). */
  public boolean matches(String given) {
    if (given == null) return false;
    byte[] candidate = digest(given);
    boolean found = false;
    for (byte[] key : digests) found |= MessageDigest.isEqual(key, candidate);
    return found;
  }

  /** Constant-time equality of two secrets; false when either is null. */
  public static boolean same(String expected, String given) {
    if (expected == null || given == null) return false;
    return MessageDigest.isEqual(digest(expected), digest(given));
  }

  private static byte[] digest(String secret) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
    }
  }
}
