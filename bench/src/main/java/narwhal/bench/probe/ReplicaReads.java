package narwhal.bench.probe;

import narwhal.bench.load.HttpWork;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Each router replica's own count of the {@code /metrics} readings it took of each engine
 * ({@code narwhal_engine_load_reads_total}, both outcomes), from its {@code /metrics}: two of them tell which replica
 * read an engine how often in between, its owner's rounds against the backups' take-overs.
 */
public final class ReplicaReads {
  private static final String SERIES = "narwhal_engine_load_reads_total{";
  private static final long TIMEOUT_MS = 30_000;

  private final List<Map<String, Double>> byReplica;

  private ReplicaReads(List<Map<String, Double>> byReplica) {
    this.byReplica = byReplica;
  }

  /** Scrapes every replica's {@code /metrics} (blocking: never call on an event loop); a replica that fails counts none. */
  public static ReplicaReads scrape(List<HttpWork> replicas) {
    return new ReplicaReads(replicas.stream().map(ReplicaReads::scrapeOne).toList());
  }

  private static Map<String, Double> scrapeOne(HttpWork replica) {
    Map<String, Double> out = new HashMap<>();
    try {
      HttpWork.Reply reply = replica.getBlocking("/metrics", TIMEOUT_MS);
      if (reply.status() != 200) return out;
      for (String line : reply.body().toString().split("\n")) {
        if (!line.startsWith(SERIES)) continue;
        int at = line.indexOf("iid=\"");
        int close = line.lastIndexOf('}');
        if (at < 0 || close < 0) continue;
        String iid = line.substring(at + 5, line.indexOf('"', at + 5));
        out.merge(iid, Double.parseDouble(line.substring(close + 1).trim()), Double::sum);
      }
    } catch (RuntimeException e) {
      out.clear();
    }
    return out;
  }

  /** Each replica's readings of {@code iid} since {@code before}, in replica order ("?" for one that did not answer). */
  public String since(ReplicaReads before, String iid) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < byReplica.size(); i++) {
      Double now = byReplica.get(i).get(iid);
      Double then = before.byReplica.get(i).get(iid);
      out.append(i == 0 ? "" : " / ").append(now == null || then == null ? "?" : String.valueOf(Math.round(now - then)));
    }
    return out.toString();
  }
}
