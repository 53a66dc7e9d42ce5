package narwhal.launcher;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterSecret;
import narwhal.common.config.ClusterConfig;

import java.util.logging.Logger;

/**
 * What a clustered replica trusts (docs/operations.md#threat-model): publishes the node's {@link ClusterSeal} (the
 * cluster secret, this replica's Hazelcast member UUID as its writer id, {@code narwhal_cluster_forged_total{where}}),
 * re-reads the secret files every {@value #REFRESH_MS} ms, starts the {@link MemberProofs}, and without a secret says once, at start, what any host on
 * the cluster network can then do.
 */
final class ClusterTrust {
  static final long REFRESH_MS = 5_000;
  private static final Logger LOG = Logger.getLogger(ClusterTrust.class.getName());

  private ClusterTrust() {
  }

  /** The seal of a replica that has joined; published on its node. */
  static ClusterSeal start(Vertx vertx, HazelcastClusterManager manager, ClusterConfig cluster, ClusterSecret secret,
                           MeterRegistry registry, ClusterHealth health) {
    ClusterSeal seal = new ClusterSeal(cluster.name(), secret, manager.getNodeId(), where -> Counter.builder("narwhal.cluster.forged")
        .description("values and bus messages refused because their tag does not verify with the cluster secret")
        .tag("where", where).register(registry).increment());
    seal.publishOn(vertx);
    health.proofs(MemberProofs.start(vertx, manager.getHazelcastInstance(), seal));
    if (!secret.enabled()) {
      LOG.warning("cluster: no cluster secret (cluster.secret_file, cluster.secret_env): any host that reaches this replica's "
          + "cluster port " + cluster.port() + " and knows cluster.name can join unnoticed and eject, drain or pin engines "
          + "through the shared state and the event bus; keep the cluster ports on a private network "
          + "(docs/operations.md#threat-model)");
    } else {
      vertx.setPeriodic(REFRESH_MS, t -> vertx.executeBlocking(() -> {
        secret.refresh();
        return null;
      }, false));
    }
    return seal;
  }
}
