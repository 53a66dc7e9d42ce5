package narwhal.router;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What engines attested about themselves (preflight fills it): the KV lease, which bounds handoff age, and
 * the KV side channel, which a descriptor must name. Unknown facts fall back to configuration.
 */
public final class EngineFacts {
  /** One engine's attested facts; null fields are unknown. */
  public record Facts(Double kvLeaseS, String sideChannel, String connector) {
  }

  private final Map<String, Facts> byIid = new ConcurrentHashMap<>();

  public void put(String iid, Facts facts) {
    byIid.put(iid, facts);
  }

  /** Records what an engine attested. */
  public void learn(String iid, narwhal.engines.checks.EngineAttestation attested) {
    put(iid, new Facts(attested.kvLeaseS(), attested.sideChannel(), attested.connector()));
  }

  /** Forgets an engine's facts (it was re-pointed or removed): until learned again, configuration stands. */
  public void forget(String iid) {
    byIid.remove(iid);
  }

  public Facts get(String iid) {
    return byIid.getOrDefault(iid, new Facts(null, null, null));
  }

  /** Handoff age bound in ms: {@code L − floor(L/6)} seconds; 0 means no bound (docs/vllm.md#the-fleet-file-for-them). */
  public long handoffBoundMs(String producerIid, double configuredLeaseS) {
    Double attested = get(producerIid).kvLeaseS();
    double lease = attested != null ? attested : configuredLeaseS;
    if (lease <= 0) return 0;
    double bound = lease - Math.floor(lease / 6);
    return (long) (bound * 1000);
  }
}
