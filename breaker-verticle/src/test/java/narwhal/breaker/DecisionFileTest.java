package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterSecret;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;
import narwhal.common.config.ClusterConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decisions file carries the cluster's tag (docs/operations.md#threat-model): written and read back by a replica
 * with the secret; refused at start, naming the file, when an entry was edited or it was written by another cluster.
 */
class DecisionFileTest {
  private static final EngineStateEvent DRAINED = new EngineStateEvent("D1", EngineState.DRAINING, "admin", 0, null, 1_000, "breaker-a");

  @TempDir
  Path dir;
  private final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private void seal(String clusterName, String secretText) throws Exception {
    Path secret = Files.writeString(dir.resolve(clusterName + ".secret"), secretText);
    ClusterConfig cluster = new ClusterConfig(true, clusterName, List.of("127.0.0.1"), 5701, "127.0.0.1", "",
        ClusterConfig.Discovery.TCP_IP, ClusterConfig.Kubernetes.defaults(), ClusterConfig.Tls.defaults(),
        ClusterConfig.StateGuard.defaults(), "", 30, 0, secret.toString(), "", "", 0);
    new ClusterSeal(clusterName, ClusterSecret.load(cluster, name -> null), "replica-a", where -> { }).publishOn(vertx);
  }

  private static <T> T await(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private Path written(Path file) throws Exception {
    DecisionFile decisions = new DecisionFile(vertx, file.toString(), "breaker-a");
    decisions.update(List.of(DRAINED));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!Files.exists(file) && System.nanoTime() < deadline) await(Future.future(p -> vertx.setTimer(10, t -> p.complete())));
    return file;
  }

  private String refusal(Path file) throws Exception {
    return await(new DecisionFile(vertx, file.toString(), "breaker-b").read().map(found -> "read " + found)
        .otherwise(Throwable::getMessage));
  }

  @Test
  void aTaggedFileIsReadBackAndATamperedOrForeignOneIsRefusedNamingIt() throws Exception {
    seal("prod", "a".repeat(40));
    Path file = written(dir.resolve("decisions.json"));
    assertTrue(Files.readString(file).contains("\"_tag\""), Files.readString(file));
    assertEquals(List.of(DRAINED), await(new DecisionFile(vertx, file.toString(), "breaker-b").read()));

    Path tampered = Files.writeString(dir.resolve("tampered.json"), Files.readString(file).replace("draining", "ejected"));
    assertTrue(refusal(tampered).startsWith("cluster.decisions_path: " + tampered + " does not carry this cluster's tag"), refusal(tampered));

    seal("other", "b".repeat(40));
    Path foreign = written(dir.resolve("foreign.json"));
    seal("prod", "a".repeat(40));
    assertTrue(refusal(foreign).startsWith("cluster.decisions_path: " + foreign + " does not carry this cluster's tag"), refusal(foreign));
  }
}
