package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Blocks pulled through a NIXL handoff become the consumer's cached blocks; a prefill's blocks the producer's as it is scheduled. */
@ExtendWith(VertxExtension.class)
class KvCacheHandoffTest {

  private static JsonObject last(SimEngine engine) {
    List<JsonObject> log = engine.requests();
    return log.get(log.size() - 1);
  }

  @Test
  void theConsumerHitsItsCacheForAPrefixItPulledBefore(Vertx vertx) {
    SimEngine producer = SimEngine.start(vertx, new SimEngineOptions().setName("p").setRole("prefill")).await();
    SimEngine consumer = SimEngine.start(vertx, new SimEngineOptions().setName("d").setRole("decode")
      .setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    String prompt = PrefixCacheTest.words("doc", 40);
    JsonObject client = SimClient.completion(prompt).put("max_tokens", 8);

    JsonObject first = http.post(producer, "/v1/completions", SimClient.prefillLeg(client)).json().getJsonObject("kv_transfer_params");
    assertEquals(3, first.getJsonArray("remote_block_ids").getJsonArray(0).size());
    SimClient.Reply decode = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, first));
    assertEquals("transferred", decode.header("x-sim-kv"));
    assertEquals(3, last(consumer).getInteger("kv_pulled_blocks"), "nothing cached yet: all three blocks are read");
    assertEquals(39, decode.json().getJsonObject("usage").getJsonObject("prompt_tokens_details").getInteger("cached_tokens"),
      "all but the last prompt token came from the producer");
    assertEquals(0, consumer.stats().getInteger("prefix_cache_hits"));

    JsonObject second = http.post(producer, "/v1/completions", SimClient.prefillLeg(client)).json().getJsonObject("kv_transfer_params");
    assertEquals(32, last(producer).getInteger("cached_tokens"), "the first prefill's blocks are the producer's cache");
    SimClient.Reply again = http.post(consumer, "/v1/completions", SimClient.decodeLeg(client, second));
    assertEquals("transferred", again.header("x-sim-kv"));
    assertEquals(1, last(consumer).getInteger("kv_pulled_blocks"), "the two cached blocks are not read again");
    assertEquals(32, consumer.stats().getInteger("prefix_cache_hits"));
    assertEquals(decode.json().getJsonArray("choices"), again.json().getJsonArray("choices"));

    SimClient.Reply direct = http.post(consumer, "/v1/completions", client);
    assertEquals(32, direct.json().getJsonObject("usage").getJsonObject("prompt_tokens_details").getInteger("cached_tokens"),
      "a plain request on the consumer reuses the pulled prefix");
    assertEquals(0, producer.stats().getInteger("blocks_in_use"));
    assertEquals(0, consumer.stats().getInteger("blocks_in_use"));
  }

  @Test
  void aSecondPrefillHitsTheBlocksTheFirstStillHoldsForItsHandoff(Vertx vertx) {
    SimEngine producer = SimEngine.start(vertx, new SimEngineOptions().setName("p").setRole("prefill")
      .setEnablePromptTokensDetails(true)).await();
    SimClient http = new SimClient(vertx);
    JsonObject client = SimClient.completion(PrefixCacheTest.words("doc", 40)).put("max_tokens", 8);

    http.post(producer, "/v1/completions", SimClient.prefillLeg(client));
    assertEquals(1, producer.stats().getInteger("handoffs_held"), producer.stats().encode());
    http.post(producer, "/v1/completions", SimClient.prefillLeg(client));
    assertEquals(32, last(producer).getInteger("cached_tokens"),
      "vLLM caches a prefill's blocks when it schedules them, not when the consumer has pulled them");
    assertEquals(2, producer.stats().getInteger("handoffs_held"));
    assertEquals(80, producer.stats().getInteger("prefix_cache_queries"));
    assertEquals(32, producer.stats().getInteger("prefix_cache_hits"));
    assertEquals(2 + 1 + 1, producer.stats().getInteger("blocks_in_use"), "the two handoffs share the prompt's two full blocks");
  }
}
