package narwhal.sim;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.net.impl.ConnectionBase;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Applies a connection fault ({@link FaultPlan#takeConnection()}) to an inference connection the engine has
 * just accepted, on its socket, so a client sees exactly the TCP behaviour: {@code accept_no_read} stops
 * reading it (the request stays in the kernel's buffers, nothing is ever answered), {@code trickle_headers}
 * sends the first response's header bytes one per {@code interval_ms}, {@code refuse_storm} closes it at
 * once (mode {@code reset}: an RST, as a listener shedding connections sends; {@code close}: a FIN).
 *
 * <p>Vert.x has no public hook below HTTP, so this reaches the connection's Netty channel.
 */
final class ConnectionFaults {

  static final long DEFAULT_TRICKLE_INTERVAL_MS = 200;

  private ConnectionFaults() {
  }

  /** Gives {@code connection} the next connection fault of {@code engine}, if any. */
  static void apply(SimEngine engine, HttpConnection connection) {
    FaultRule fault = engine.faults().takeConnection();
    if (fault == null || !(connection instanceof ConnectionBase base)) {
      return;
    }
    Channel channel = base.channel();
    switch (fault.type()) {
      case ACCEPT_NO_READ -> {
        channel.config().setAutoRead(false);
        channel.pipeline().addFirst("sim-no-read", new NoRead());
      }
      case TRICKLE_HEADERS -> channel.pipeline().addFirst("sim-trickle",
          new TrickleHeaders(Math.max(1, Math.round(fault.doubleParam("interval_ms", DEFAULT_TRICKLE_INTERVAL_MS)))));
      case REFUSE_STORM -> {
        if (!"close".equals(fault.stringParam("mode", "reset"))) {
          channel.config().setOption(ChannelOption.SO_LINGER, 0);
        }
        channel.close();
      }
      default -> {
      }
    }
  }

  /** Never asks the socket for data again, and drops whatever a read already in progress brings. */
  private static final class NoRead extends ChannelDuplexHandler {
    @Override
    public void read(ChannelHandlerContext ctx) {
      // no read: the client's bytes stay unread
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ReferenceCountUtil.release(msg);
    }
  }

  /**
   * Holds what the HTTP encoder writes and lets it out one byte per interval until the blank line ending the
   * first response's headers has gone out; the rest, and later responses, pass at once.
   */
  private static final class TrickleHeaders extends ChannelDuplexHandler {
    private final long intervalMs;
    private ByteBuf pending;
    private final List<ChannelPromise> promises = new ArrayList<>();
    private ChannelPromise closeAfter;
    private ScheduledFuture<?> task;
    private boolean headersSent;
    private int matched;

    TrickleHeaders(long intervalMs) {
      this.intervalMs = intervalMs;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
      if (headersSent || !(msg instanceof ByteBuf buf)) {
        ctx.write(msg, promise);
        return;
      }
      if (pending == null) {
        pending = Unpooled.buffer();
      }
      pending.writeBytes(buf);
      buf.release();
      promises.add(promise);
      if (task == null) {
        task = ctx.executor().scheduleAtFixedRate(() -> step(ctx), 0, intervalMs, TimeUnit.MILLISECONDS);
      }
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
      if (headersSent) {
        ctx.flush();
      }
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
      if (headersSent || pending == null) {
        ctx.close(promise);
      } else {
        closeAfter = promise;
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      stop();
      if (pending != null) {
        pending.release();
        pending = null;
      }
      promises.forEach(p -> p.tryFailure(new java.nio.channels.ClosedChannelException()));
      promises.clear();
      ctx.fireChannelInactive();
    }

    private void step(ChannelHandlerContext ctx) {
      if (pending == null || !pending.isReadable()) {
        return;
      }
      byte b = pending.readByte();
      ctx.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {b}));
      matched = switch (matched) {
        case 0, 2 -> b == '\r' ? matched + 1 : 0;
        case 1, 3 -> b == '\n' ? matched + 1 : (b == '\r' ? 1 : 0);
        default -> 0;
      };
      if (matched < 4) {
        return;
      }
      headersSent = true;
      stop();
      ctx.writeAndFlush(pending);
      pending = null;
      promises.forEach(ChannelPromise::trySuccess);
      promises.clear();
      if (closeAfter != null) {
        ctx.close(closeAfter);
      }
    }

    private void stop() {
      if (task != null) {
        task.cancel(false);
      }
    }
  }
}
