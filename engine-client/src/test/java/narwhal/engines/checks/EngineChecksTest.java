package narwhal.engines.checks;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.common.config.Role;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The engine checks against two simulated engines started with an API key, as vLLM's {@code --api-key}: with the key
 * from {@code engine.engine_api_key_env} every check and both transfer legs pass and the engines refuse nothing;
 * without it the engines refuse, and every failure says which step failed and why (status and the engine's
 * message, or what went wrong on the way).
 */
@Timeout(60)
class EngineChecksTest {
  static final String KEY = "sk-engine-test";
  static final String KEY_ENV = "TEST_ENGINE_KEY";
  static final UnaryOperator<String> ENV = name -> KEY_ENV.equals(name) ? KEY : null;
  static Vertx vertx;
  static SimEngine producer;
  static SimEngine consumer;

  @BeforeAll
  static void start() {
    vertx = Vertx.vertx();
    producer = await(SimEngine.start(vertx, new SimEngineOptions().setName("P0").setRole("prefill").setApiKey(KEY)));
    consumer = await(SimEngine.start(vertx, new SimEngineOptions().setName("D0").setRole("decode").setApiKey(KEY)));
  }

  @AfterAll
  static void stop() {
    await(vertx.close());
  }

  @BeforeEach
  void clear() {
    for (SimEngine e : List.of(producer, consumer)) {
      e.faults().clear();
      e.clearRequests();
    }
  }

  static NarwhalConfig config(String keyEnv, JsonObject contract) {
    JsonArray engines = new JsonArray()
        .add(new JsonObject().put("iid", "P0").put("url", producer.url()).put("role", "prefill"))
        .add(new JsonObject().put("iid", "D0").put("url", consumer.url()).put("role", "decode"));
    JsonObject json = new JsonObject().put("model", SimEngineOptions.DEFAULT_MODEL).put("engines", engines)
        .put("engine", new JsonObject().put("engine_api_key_env", keyEnv).put("first_token_timeout_s", 5)
            .put("health_timeout_s", 5));
    if (contract != null) json.put("engine_contract", contract);
    return NarwhalConfig.fromJson(json);
  }

  static EngineConfig engine(NarwhalConfig cfg, String iid) {
    return cfg.engine(iid).orElseThrow();
  }

  static long refused(SimEngine engine) {
    return engine.stats().getLong("unauthorized");
  }

  @Test
  void withTheKeyEveryCheckPassesAndTheEnginesRefuseNothing() {
    NarwhalConfig cfg = config(KEY_ENV, new JsonObject().put("model", SimEngineOptions.DEFAULT_MODEL));
    EngineChecks checks = new EngineChecks(vertx, () -> cfg, ENV);
    try {
      EngineConfig p = engine(cfg, "P0");
      EngineConfig d = engine(cfg, "D0");
      for (EngineConfig e : List.of(p, d)) {
        await(checks.health(e));
        await(checks.modelListed(e));
        EngineAttestation attested = await(checks.contract(e));
        assertEquals(30.0, attested.kvLeaseS(), "the lease the simulator attests");
        assertEquals("nixl", attested.connector());
        await(checks.generation(e));
      }
      EngineAttestation pAttested = await(checks.attestation(p));
      await(checks.transfer(p, d, checks.expectations(pAttested), ProbeBounds.inference(cfg), "probe"));
      assertTrue(consumer.requests().stream().anyMatch(r -> r.getString("request_id").startsWith("probe-")
          && r.getString("request_id").endsWith("-decode")), "the decode leg reached the consumer");
      assertEquals(0, refused(producer), "the producer refused nothing");
      assertEquals(0, refused(consumer), "the consumer refused nothing");
    } finally {
      await(checks.close());
    }
  }

  @Test
  void withoutTheKeyEveryV1CheckFailsWithTheEnginesStatusAndMessage() {
    NarwhalConfig cfg = config("", null);
    EngineChecks checks = new EngineChecks(vertx, () -> cfg, ENV);
    try {
      EngineConfig p = engine(cfg, "P0");
      EngineConfig d = engine(cfg, "D0");
      await(checks.health(p));
      assertEquals("models: engine answered HTTP 401: Unauthorized", CheckFailure.describe(failure(checks.modelListed(p))));
      assertEquals("generation: engine answered HTTP 401: Unauthorized", CheckFailure.describe(failure(checks.generation(d))));
      assertEquals("prefill: engine answered HTTP 401: Unauthorized",
          CheckFailure.describe(failure(checks.transfer(p, d, checks.expectations(null), ProbeBounds.inference(cfg), "probe"))));
      assertEquals(2, refused(producer), "/v1/models and the prefill leg were refused");
      assertEquals(1, refused(consumer), "the generation was refused");
    } finally {
      await(checks.close());
    }
  }

  @Test
  void everyFailedCheckSaysWhy() {
    NarwhalConfig cfg = config(KEY_ENV, new JsonObject().put("vllm_version", "0.1.0"));
    EngineChecks checks = new EngineChecks(vertx, () -> cfg, ENV);
    try {
      EngineConfig p = engine(cfg, "P0");
      EngineConfig d = engine(cfg, "D0");
      producer.faults().add(new JsonObject().put("kind", "health_503"));
      assertEquals("health: engine answered HTTP 503", CheckFailure.describe(failure(checks.health(p))));

      String contract = CheckFailure.describe(failure(checks.contract(d)));
      assertTrue(contract.startsWith("contract: vllm_version is ") && contract.endsWith(", contract pins 0.1.0"), contract);

      consumer.faults().add(new JsonObject().put("kind", "status").put("status", 500).put("phase", "decode").put("count", 1));
      String decode = CheckFailure.describe(failure(checks.transfer(p, d, checks.expectations(null), ProbeBounds.inference(cfg), "probe")));
      assertTrue(decode.startsWith("decode: engine answered HTTP 500"), decode);

      producer.faults().add(new JsonObject().put("kind", "descriptor_no_engine_id").put("count", 1));
      String descriptor = CheckFailure.describe(failure(checks.transfer(p, d, checks.expectations(null), ProbeBounds.inference(cfg), "probe")));
      assertEquals("prefill: invalid handoff descriptor: missing engine identity", descriptor);

      consumer.faults().add(new JsonObject().put("kind", "reset").put("count", 1));
      assertEquals("generation: the engine closed the connection before a complete answer",
          CheckFailure.describe(failure(checks.generation(d))));

      EngineConfig nowhere = new EngineConfig("X", "http://127.0.0.1:" + freePort(), Role.BOTH, "", "");
      assertEquals("attestation: could not connect (connection refused)", CheckFailure.describe(failure(checks.attestation(nowhere))));
      assertEquals("prefill: could not connect to the engine",
          CheckFailure.describe(failure(checks.transfer(nowhere, d, checks.expectations(null), ProbeBounds.inference(cfg), "probe"))));
    } finally {
      await(checks.close());
    }
  }

  @Test
  void aCheckThatRunsOutOfTimeSaysWhichBound() {
    NarwhalConfig cfg = NarwhalConfig.fromJson(config(KEY_ENV, null).toJson()
        .put("engine", config(KEY_ENV, null).toJson().getJsonObject("engine").put("first_token_timeout_s", 0.3)));
    EngineChecks checks = new EngineChecks(vertx, () -> cfg, ENV);
    try {
      consumer.faults().add(new JsonObject().put("kind", "hang_before_headers").put("count", 1));
      String why = CheckFailure.describe(failure(checks.generation(engine(cfg, "D0"))));
      assertEquals("generation: no complete answer within 0.3s", why);
    } finally {
      await(checks.close());
    }
  }

  @Test
  void aFailureNeverHasAnEmptyReason() {
    assertEquals("failed without a reason", new CheckFailure("health", "").reason());
    assertEquals("IllegalStateException", CheckFailure.reasonOf(new IllegalStateException()));
    assertFalse(CheckFailure.describe(new RuntimeException(" ")).isBlank());
  }

  static int freePort() {
    try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  static Throwable failure(Future<?> future) {
    try {
      Object value = future.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      throw new AssertionError("expected a failure, got " + value);
    } catch (ExecutionException e) {
      return assertInstanceOf(CheckFailure.class, e.getCause());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("future did not complete: " + e, e);
    }
  }
}
