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
   * The keys held by the environment variable {@code envName}, comma-separated (blanks around a key are dropped);
   * {@code envName} "" is open. A named variable that is unset or holds no key is refused naming {@code configKey}:
   * an operator who asked for keys never gets an open router by mistake.
   */
  public static BearerKeys fromEnv(String configKey, String envName, UnaryOperator<String> env) {
    if (envName.isEmpty()) return OPEN;
    List<String> keys = split(env.apply(envName));
    if (keys.isEmpty()) {
      throw new ConfigException(configKey, configKey + ": the environment variable " + envName
          + " is not set or holds no key: expected one or more comma-separated keys");
    }
    return of(keys);
  }

  /** The comma-separated keys of {@code value}, trimmed, empty ones dropped; none for null. */
  public static List<String> split(String value) {
    List<String> keys = new ArrayList<>();
    if (value == null) return keys;
    for (String part : value.split(",")) {
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
    if (authorization == null || authorization.length() < 7 || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return false;
    }
    return matches(authorization.substring(7).strip());
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
