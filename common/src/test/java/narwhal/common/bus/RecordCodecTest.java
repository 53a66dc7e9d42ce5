package narwhal.common.bus;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.DeliveryOptions;
import narwhal.common.fault.FailureClass;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/** A record crosses the local bus as itself and the wire as its JSON, read back equal; registering twice is harmless. */
class RecordCodecTest {
  private static final LegOutcome FAILED = new LegOutcome("D0", Phase.DECODE, false, FailureClass.values()[0], "eof_before_done",
      "P0", true);

  @Test
  void theWireFormIsTheJsonAndReadsBackEqual() {
    Buffer wire = Buffer.buffer("prefix");
    LegOutcome.CODEC.encodeToWire(wire, FAILED);
    assertEquals(FAILED, LegOutcome.CODEC.decodeFromWire("prefix".length(), wire));
    assertEquals(FAILED, LegOutcome.of(FAILED.toJson()), "a JSON body of the same fields reads alike");
  }

  @Test
  void aLocalDeliveryHandsOverTheRecordItself() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      LegOutcome.CODEC.registerOn(vertx.eventBus());
      LegOutcome.CODEC.registerOn(vertx.eventBus());
      CompletableFuture<Object> received = new CompletableFuture<>();
      vertx.eventBus().localConsumer("test.outcome", msg -> received.complete(msg.body())).completion()
          .await(10, TimeUnit.SECONDS);
      vertx.eventBus().send("test.outcome", FAILED, new DeliveryOptions().setLocalOnly(true));
      assertSame(FAILED, received.get(10, TimeUnit.SECONDS));
    } finally {
      vertx.close().await(10, TimeUnit.SECONDS);
    }
  }
}
