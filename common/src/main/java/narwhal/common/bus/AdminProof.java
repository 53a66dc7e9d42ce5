package narwhal.common.bus;

import io.vertx.core.json.JsonObject;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * How an admin command proves it knows the admin token without carrying it (docs/operations.md#admin-commands): the
 * message's {@value #FIELD} is {@code {"at_ms", "nonce", "mac"}}, {@code mac} an HMAC-SHA256 keyed by the token over
 * the command, its arguments, {@code at_ms} and the random nonce. A member that receives the message learns neither
 * the token nor a proof it can use for another command. The replica's reply carries {@value #REPLY_MAC}, an HMAC keyed
 * by the token over the nonce and the reply, so the sender believes only a reply from a holder of the token.
 */
public final class AdminProof {
  /** The body field holding the proof. */
  public static final String FIELD = "proof";
  /** The reply field holding the reply's HMAC. */
  public static final String REPLY_MAC = "mac";
  /** How old (or how far ahead) a proof's {@code at_ms} may be: the clock skew tolerated between hosts. */
  public static final long FRESH_MS = ClockBound.MAX_SKEW_MS;
  private static final SecureRandom RANDOM = new SecureRandom();

  private AdminProof() {
  }

  /** The message {@code {"command", "args", "proof"}} proving {@code token} at {@code nowMs}; no proof when token is null. */
  public static JsonObject body(String token, String command, JsonObject args, long nowMs) {
    JsonObject body = new JsonObject().put("command", command).put("args", args);
    if (token == null || token.isEmpty()) return body;
    byte[] nonce = new byte[16];
    RANDOM.nextBytes(nonce);
    return body.put(FIELD, proof(token, command, args, nowMs, Base64.getUrlEncoder().withoutPadding().encodeToString(nonce)));
  }

  /** The proof of {@code token} for this command, time and nonce. */
  public static JsonObject proof(String token, String command, JsonObject args, long atMs, String nonce) {
    return new JsonObject().put("at_ms", atMs).put("nonce", nonce).put("mac", mac(token, "command", command, args.encode(),
        Long.toString(atMs), nonce));
  }

  /** Whether {@code proof}'s mac is {@code token}'s for this command and arguments (in constant time); false for a null token. */
  public static boolean verifies(String token, String command, JsonObject args, JsonObject proof) {
    if (token == null || token.isEmpty() || !(proof.getValue("at_ms") instanceof Number at) || !(proof.getValue("nonce") instanceof String nonce)
        || !(proof.getValue("mac") instanceof String given)) {
      return false;
    }
    return same(given, mac(token, "command", command, args.encode(), Long.toString(at.longValue()), nonce));
  }

  /** {@code reply} with its {@value #REPLY_MAC} for the proof's nonce. */
  public static JsonObject signReply(String token, String nonce, JsonObject reply) {
    JsonObject signed = unsigned(reply);
    return signed.put(REPLY_MAC, mac(token, "reply", nonce, signed.encode()));
  }

  /** Whether {@code reply}'s {@value #REPLY_MAC} is {@code token}'s for the nonce. */
  public static boolean replyVerifies(String token, String nonce, JsonObject reply) {
    return token != null && !token.isEmpty() && reply.getValue(REPLY_MAC) instanceof String given
        && same(given, mac(token, "reply", nonce, unsigned(reply).encode()));
  }

  /** {@code reply} without its signatures (the reply mac and the cluster seal's fields). */
  public static JsonObject unsigned(JsonObject reply) {
    JsonObject copy = reply.copy();
    copy.remove(REPLY_MAC);
    copy.remove(ClusterSeal.BY);
    copy.remove(ClusterSeal.TAG);
    return copy;
  }

  private static boolean same(String given, String expected) {
    return MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), expected.getBytes(StandardCharsets.UTF_8));
  }

  private static String mac(String token, String... parts) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
      for (String part : parts) {
        mac.update(part.getBytes(StandardCharsets.UTF_8));
        mac.update((byte) 0);
      }
      return Base64.getUrlEncoder().withoutPadding().encodeToString(mac.doFinal());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }
}
