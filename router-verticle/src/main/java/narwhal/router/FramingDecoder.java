package narwhal.router;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.impl.VertxHttpRequestDecoder;
import io.vertx.core.http.impl.headers.HeadersMultiMap;

import java.util.ArrayList;
import java.util.List;

/**
 * Vert.x's HTTP/1.x request decoder with the message framing rules of RFC 9112 §6 enforced, so that the router
 * never reads a request's length differently from a proxy in front of it (request smuggling). Netty lets
 * {@code Transfer-Encoding: chunked} silently win over {@code Content-Length}, reads a request whose transfer coding
 * it does not know as having no body (its body then parses as the next request), and takes the first of two
 * HTTP/1.0 {@code Content-Length} fields; RFC 9112 §3.2 also wants exactly one {@code Host} in an HTTP/1.1 request.
 * Here each of these fails the request head with a {@link Refused} naming
 * the fault: the server's invalid-request handler answers 400 and closes, and the decoder discards everything
 * else the connection sends.
 */
final class FramingDecoder extends VertxHttpRequestDecoder {
  private static final int SHOWN = 40;
  private int contentLengthFields;

  FramingDecoder(HttpServerOptions options) {
    super(options);
  }

  /** Why a request head is refused; its message is the client's error message. */
  static final class Refused extends IllegalArgumentException {
    Refused(String message) {
      super(message);
    }
  }

  @Override
  protected HttpMessage createMessage(String[] initialLine) {
    contentLengthFields = 0;
    String version = initialLine[2];
    if (!"HTTP/1.1".equals(version) && !"HTTP/1.0".equals(version)) throw new Refused("unsupported HTTP version " + shown(version));
    return super.createMessage(initialLine);
  }

  /**
   * The header that marks the request {@link #createInvalidMessage} makes, so its placeholder path is never taken
   * for a path a client called.
   */
  static final String UNREAD = "x-narwhal-request-line";

  /** A refused request line leaves no request to answer with: this one (HTTP/1.1) is answered instead. */
  @Override
  protected HttpMessage createInvalidMessage() {
    return new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/bad-request",
        HeadersMultiMap.httpHeaders().add(UNREAD, "unread"));
  }

  @Override
  protected AsciiString splitHeaderName(byte[] sb, int start, int length) {
    AsciiString name = super.splitHeaderName(sb, start, length);
    if (HttpHeaderNames.CONTENT_LENGTH.contentEqualsIgnoreCase(name)) contentLengthFields++;
    return name;
  }

  /**
   * Netty asks this of every request once its headers are read and before it decides how to read the body: the one
   * point where all framing headers are known and nothing of the body is consumed yet.
   */
  @Override
  protected boolean isContentAlwaysEmpty(HttpMessage msg) {
    if (msg instanceof HttpRequest request) checkFraming(request);
    return super.isContentAlwaysEmpty(msg);
  }

  /** Netty's own refusals of a {@code Content-Length} get a message that says what is wrong. */
  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf buffer, List<Object> out) throws Exception {
    int before = out.size();
    super.decode(ctx, buffer, out);
    for (int i = before; i < out.size(); i++) {
      if (out.get(i) instanceof HttpRequest request && request.decoderResult().cause() instanceof IllegalArgumentException cause
          && !(cause instanceof Refused) && contentLengthFault(String.valueOf(cause.getMessage()))) {
        request.setDecoderResult(DecoderResult.failure(new Refused("Content-Length: expected a single decimal number of bytes")));
      }
    }
  }

  /** Netty's refusals of a Content-Length value (HttpUtil.normalizeAndGetContentLength). */
  private static boolean contentLengthFault(String message) {
    return message.startsWith("Content-Length value") || message.startsWith("Multiple Content-Length values");
  }

  private void checkFraming(HttpRequest request) {
    int hosts = request.headers().getAll(HttpHeaderNames.HOST).size();
    if (hosts > 1 || hosts == 0 && request.protocolVersion().minorVersion() == 1) {
      throw new Refused("Host: expected exactly one Host header in an HTTP/1.1 request");
    }
    if (contentLengthFields > 1) throw new Refused("Content-Length: expected a single decimal number of bytes");
    List<String> fields = request.headers().getAll(HttpHeaderNames.TRANSFER_ENCODING);
    if (fields.isEmpty()) return;
    if (contentLengthFields > 0) throw new Refused("Content-Length together with Transfer-Encoding: ambiguous request framing");
    if (request.protocolVersion().minorVersion() == 0) throw new Refused("Transfer-Encoding in an HTTP/1.0 request");
    List<String> codings = new ArrayList<>();
    for (String field : fields) {
      for (String coding : field.split(",", -1)) codings.add(coding.trim());
    }
    String last = codings.get(codings.size() - 1);
    if (!"chunked".equalsIgnoreCase(last)) {
      throw new Refused("Transfer-Encoding: the final coding must be chunked, not '" + shown(last) + "'");
    }
    if (codings.size() > 1) {
      String other = codings.subList(0, codings.size() - 1).stream().filter(c -> !"chunked".equalsIgnoreCase(c)).findFirst().orElse(null);
      throw new Refused(other == null ? "Transfer-Encoding: chunked more than once"
          : "Transfer-Encoding: only chunked is supported, not '" + shown(other) + "'");
    }
  }

  private static String shown(String text) {
    return text.length() <= SHOWN ? text : text.substring(0, SHOWN) + "...";
  }
}
