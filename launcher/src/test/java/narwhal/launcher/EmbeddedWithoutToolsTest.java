package narwhal.launcher;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.config.NarwhalConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** narwhal.jar has no simulator: a fleet with {@code sim.embedded: true} is refused at start, naming the tools jar. */
@Timeout(60)
class EmbeddedWithoutToolsTest {
  @Test
  void anEmbeddedFleetIsRefusedNamingTheToolsJar() throws Exception {
    assertTrue(EmbeddedEngines.installed().isEmpty(), "the launcher's class path has no EmbeddedEngines provider");
    NarwhalConfig config = NarwhalConfig.fromJson(new JsonObject().put("model", ClusterHarness.MODEL)
        .put("engines", new JsonArray()
            .add(new JsonObject().put("iid", "P0").put("url", "http://127.0.0.1:1").put("role", "prefill"))
            .add(new JsonObject().put("iid", "D0").put("url", "http://127.0.0.1:2").put("role", "decode")))
        .put("sim", new JsonObject().put("embedded", true))
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", 0)));
    Throwable refused = NarwhalNode.start(config, NarwhalNode.PreflightMode.SKIP, line -> { })
        .transform(ar -> io.vertx.core.Future.succeededFuture(ar.cause())).await(30, TimeUnit.SECONDS);
    assertEquals(NarwhalNode.NO_SIMULATOR, refused == null ? null : refused.getMessage());
    assertTrue(refused.getMessage().contains("tools/target/narwhal-tools.jar"), refused.getMessage());
  }
}
