package narwhal.router;

import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.impl.ConnectionBase;

/**
 * Makes HTTP/1.x framing errors answerable (R5). Installs the {@link FramingDecoder} (RFC 9112 §6: request heads
 * whose framing is ambiguous are refused) in place of Vert.x's decoder, and itself sits between the decoder and
 * Vert.x's connection handler: Vert.x closes a connection whose body framing breaks (a bad chunk size) before
 * anything written in reply is flushed, so a broken body is turned into an ended one, reported through
 * {@code onBrokenBody} so the router refuses the request instead of serving what arrived; the response to a broken
 * body says {@code connection: close} and the connection closes once it is written ({@link CloseAfterResponse},
 * installed only then: the writes of every other connection do not pass through the guard).
 */
final class FramingGuard extends ChannelInboundHandlerAdapter {
  private static final String NAME = "narwhal-framing-guard";
  private static final String DECODER = "httpDecoder";
  private static final String VERTX_HANDLER = "handler";
  private static final String CLOSING = "narwhal-close-after-response";

  private final Runnable onBrokenBody;
  private boolean broken;

  private FramingGuard(Runnable onBrokenBody) {
    this.onBrokenBody = onBrokenBody;
  }

  /**
   * Installs the decoder and the guard on an HTTP/1.x server connection, from its connection handler (before any
   * byte is read); other connections are left as they are.
   */
  static void install(HttpConnection connection, HttpServerOptions options, Runnable onBrokenBody) {
    if (!(connection instanceof ConnectionBase base)) return;
    ChannelPipeline pipeline = base.channel().pipeline();
    if (pipeline.get(DECODER) != null && pipeline.get(VERTX_HANDLER) != null && pipeline.get(NAME) == null) {
      pipeline.replace(DECODER, DECODER, new FramingDecoder(options));
      pipeline.addBefore(VERTX_HANDLER, NAME, new FramingGuard(onBrokenBody));
    }
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof HttpRequest) && msg instanceof HttpContent content && content.decoderResult().isFailure()) {
      ReferenceCountUtil.release(content);
      if (broken) return;
      broken = true;
      ctx.pipeline().addBefore(VERTX_HANDLER, CLOSING, new CloseAfterResponse());
      onBrokenBody.run();
      ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
      return;
    }
    ctx.fireChannelRead(msg);
  }

  /** The response to a broken body: {@code connection: close}, and the connection closed once it is written. */
  private static final class CloseAfterResponse extends ChannelOutboundHandlerAdapter {
    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
      if (msg instanceof HttpResponse response) response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      if (msg instanceof LastHttpContent) {
        ctx.write(msg, promise.unvoid()).addListener(ChannelFutureListener.CLOSE);
      } else {
        ctx.write(msg, promise);
      }
    }
  }
}
