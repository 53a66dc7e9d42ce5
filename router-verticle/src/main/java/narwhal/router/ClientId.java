package narwhal.router;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;

import java.nio.charset.StandardCharsets;

/**
 * The one id a client sees for its request, as vLLM builds it ({@code _base_request_id}): the client's
 * {@code x-request-id} when it sends one, else the body's {@code request_id}, else the router's own id; the answer's
 * {@code id} is {@code cmpl-<base>} or {@code chatcmpl-<base>}, the same in every streamed chunk, the non-streamed answer
 * and the {@code x-request-id} response header. The engines see per-leg ids ({@code <rid>-a1-decode}); {@link #replaceFirst}
 * puts the client's id in place of the decode engine's in a relayed frame, touching no other byte.
 */
final class ClientId {
  private ClientId() {
  }

  /** The base id: {@code header} when non-empty, else the body's string {@code request_id}, else {@code rid}. */
  static String base(String header, JsonObject body, String rid) {
    if (header != null && !header.isEmpty()) return header;
    return body.getValue("request_id") instanceof String own && !own.isEmpty() ? own : rid;
  }

  /** The answer id vLLM gives a request with base id {@code base}. */
  static String answer(boolean chat, String base) {
    return (chat ? "chatcmpl-" : "cmpl-") + base;
  }

  /**
   * {@code frame} ({@code data: {...}}) with the first occurrence of {@code from} replaced by {@code to}: with the
   * engine's quoted id, the top-level {@code id}, which vLLM writes first. The frame itself when {@code from} is not in it.
   */
  static Buffer replaceFirst(Buffer frame, byte[] from, byte[] to) {
    int at = indexOf(frame, from);
    if (at < 0) return frame;
    return Buffer.buffer(frame.length() - from.length + to.length).appendBuffer(frame, 0, at).appendBytes(to)
        .appendBuffer(frame, at + from.length, frame.length() - at - from.length);
  }

  /** {@code "id"} as a JSON string's bytes (quotes included): what {@link #replaceFirst} looks for and writes. */
  static byte[] quoted(String id) {
    return Json.encode(id).getBytes(StandardCharsets.UTF_8);
  }

  private static int indexOf(Buffer frame, byte[] needle) {
    int last = frame.length() - needle.length;
    outer:
    for (int i = 0; i <= last; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (frame.getByte(i + j) != needle[j]) continue outer;
      }
      return i;
    }
    return -1;
  }
}
