package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The simulator's {@code deferred} count (decode legs pulling their KV, {@code vllm:num_requests_waiting_by_reason
 * {reason="deferred"}}) returns to 0 however a pull ends: a client that leaves mid-pull, an injected
 * {@code kv_transfer_fail}, a descriptor whose handoff is gone (already taken).
 */
@ExtendWith(VertxExtension.class)
class DeferredLeakTest {
  private static final String PROMPT = "please summarise the following forty words of text about rivers and stones "
    + "and light in the quiet morning near the harbor where the lanterns glow";

  private Vertx vertx;
  private MutableClock clock;
  private SimEngine producer;
  private SimClient http;

  @BeforeEach
  void start(Vertx vertx) {
    this.vertx = vertx;
    clock = new MutableClock();
    producer = SimEngine.start(vertx, new SimEngineOptions().setName("p").setRole("prefill"), clock).await();
    http = new SimClient(vertx);
  }

  private JsonObject descriptor(JsonObject client, String rid) {
    SimClient.Reply r = http.post(producer, "/v1/completions", SimClient.prefillLeg(client), "x-request-id", rid);
    assertEquals(200, r.status, r.text);
    return r.json().getJsonObject("kv_transfer_params");
  }

  private SimEngine decoder(long perBlockMs) {
    return SimEngine.start(vertx, new SimEngineOptions().setName("d" + perBlockMs).setRole("decode")
      .setKvTransferPerBlockMs(perBlockMs), clock).await();
  }

  private Future<SimClient.Reply> decode(SimEngine d, JsonObject client, JsonObject descriptor, String rid, long idleMs) {
    return http.callAsync(d.port(), HttpMethod.POST, "/v1/completions", SimClient.decodeLeg(client, descriptor).toBuffer(),
      idleMs, "x-request-id", rid);
  }

  private static <T> void settle(Future<T> f) {
    f.recover(err -> Future.succeededFuture()).toCompletionStage().toCompletableFuture().join();
  }

  @Test
  void aClientLeavingMidPullLeavesNothingDeferred() {
    SimEngine d = decoder(3000);
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 4);
    Future<SimClient.Reply> leg = decode(d, client, descriptor(client, "rid-a"), "rid-a", 500);
    assertTrue(http.eventually(() -> d.stats().getInteger("deferred") == 1), d.stats().encode());
    settle(leg);
    assertTrue(http.eventually(() -> d.stats().getInteger("deferred") == 0
      && d.stats().getInteger("waiting") == 0 && d.stats().getInteger("running") == 0), d.stats().encode());
  }

  @Test
  void anInjectedTransferFailureLeavesNothingDeferred() {
    SimEngine d = decoder(50);
    d.faults().add(new JsonObject().put("kind", "kv_transfer_fail").put("count", 1));
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 4);
    settle(decode(d, client, descriptor(client, "rid-f"), "rid-f", SimClient.DEFAULT_IDLE_TIMEOUT_MS));
    assertTrue(http.eventually(() -> d.stats().getInteger("deferred") == 0
      && d.stats().getInteger("waiting") == 0 && d.stats().getInteger("running") == 0), d.stats().encode());
  }

  @Test
  void aHandoffAlreadyTakenLeavesNothingDeferred() {
    SimEngine d = decoder(50);
    JsonObject client = SimClient.completion(PROMPT).put("max_tokens", 4);
    JsonObject descriptor = descriptor(client, "rid-t");
    settle(decode(d, client, descriptor, "rid-t", SimClient.DEFAULT_IDLE_TIMEOUT_MS));
    settle(decode(d, client, descriptor, "rid-t2", SimClient.DEFAULT_IDLE_TIMEOUT_MS));
    JsonObject bogus = descriptor.copy().put("remote_port", 1);
    settle(decode(d, client, bogus, "rid-t3", SimClient.DEFAULT_IDLE_TIMEOUT_MS));
    assertTrue(http.eventually(() -> d.stats().getInteger("deferred") == 0
      && d.stats().getInteger("waiting") == 0 && d.stats().getInteger("running") == 0), d.stats().encode());
  }
}
