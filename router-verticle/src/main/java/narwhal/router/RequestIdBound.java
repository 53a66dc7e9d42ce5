package narwhal.router;

/**
 * What a client's {@code x-request-id} may be (docs/errors.md): at most {@link #MAX_CHARS} visible ASCII characters
 * ({@code !} to {@code ~}). The id is echoed in the response header, in every chunk's {@code id} and in the journal, so an
 * unbounded one costs every frame of the answer; 256 leaves room for composite trace ids (a UUID is 36, an AWS
 * {@code X-Amzn-Trace-Id} about 80).
 */
final class RequestIdBound {
  static final int MAX_CHARS = 256;

  private RequestIdBound() {
  }

  static boolean accepts(String id) {
    if (id.length() > MAX_CHARS) return false;
    for (int i = 0; i < id.length(); i++) {
      char c = id.charAt(i);
      if (c < '!' || c > '~') return false;
    }
    return true;
  }

  /** The 400 naming the header and the bound; the id itself is not repeated. */
  static EdgeError refusal(String id) {
    return refusal("x-request-id", id);
  }

  /** The 400 naming {@code param} (the header or the body's {@code request_id}) and the bound. */
  static EdgeError refusal(String param, String id) {
    String what = id.length() > MAX_CHARS ? id.length() + " characters" : "a character outside visible ASCII";
    return EdgeError.invalid(param + ": expected at most " + MAX_CHARS + " visible ASCII characters (! to ~), got "
        + what, param);
  }
}
