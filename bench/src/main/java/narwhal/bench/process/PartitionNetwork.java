package narwhal.bench.process;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Two network namespaces, one per router replica, that a test can really cut apart and join again. Each namespace has
 * an uplink (a veth pair) to the test's own namespace, where the simulated engines and the test's HTTP clients are, and
 * the two share a cluster link (a veth pair between them) that their Hazelcast members and event buses bind to. A
 * partition is an nftables table in each namespace that drops every packet to the other side's cluster address, so the
 * engines and the test still reach both sides; healing deletes the tables. Everything lives in the two namespaces,
 * which {@link #close} deletes (with their veths and rules), so nothing is left on the host even when a test fails.
 * Needs root, {@code ip} (iproute2) and {@code nft} (nftables); without them {@link #create} throws {@link Unavailable} saying so.
 *
 * <p>Addresses, in a random {@code 10.X.Y.0/24} per instance: uplink A {@code .1} (test side) / {@code .2}, uplink B
 * {@code .5} / {@code .6}, cluster link A {@code .9}, B {@code .10}. Engines listen on every address of the test's
 * namespace and both sides reach them at {@link #engineHost()} (side B through its uplink's gateway).
 *
 * <p>Used by {@code PartitionTest} (launcher's tests) and by {@code bench chaos}'s {@code partition} phase (R9); it lives
 * in the bench module, which the production jar never carries.
 */
public final class PartitionNetwork implements AutoCloseable {
  private static final String TABLE = "narwhal_partition";
  private static final String CUT_TABLE = "narwhal_cut";

  /** One side: its namespace, the address the test reaches it at, its cluster address. */
  public record Side(String namespace, String host, String clusterHost) {
    /** The command prefix that runs a program in this side's namespace. */
    public List<String> exec() {
      return List.of("ip", "netns", "exec", namespace);
    }
  }

  private final String id;
  private final String prefix;
  public final Side a;
  public final Side b;
  private final List<String> created = new ArrayList<>();

  private PartitionNetwork(String id, String prefix) {
    this.id = id;
    this.prefix = prefix;
    this.a = new Side("narwhal-" + id + "-a", prefix + ".2", prefix + ".9");
    this.b = new Side("narwhal-" + id + "-b", prefix + ".6", prefix + ".10");
  }

  /** Why a partition cannot be made here (no root, no {@code ip}, no {@code nft}, namespaces refused): {@link #create} throws it. */
  public static final class Unavailable extends IllegalStateException {
    Unavailable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Creates both namespaces and their links; throws {@link Unavailable} saying what is missing when the machine cannot
   * (not root, no {@code ip} or {@code nft}, namespaces or veths refused), having removed whatever it had made.
   */
  public static PartitionNetwork create() throws IOException, InterruptedException {
    String needs = "a partition needs root, `ip` (iproute2) and `nft` (nftables; apt-get install -y nftables iproute2, as .ci/run does)";
    Result uid = runQuietly(List.of("id", "-u"));
    if (uid.exit == 0 && !uid.output.equals("0")) throw new Unavailable(needs + ": this runs as uid " + uid.output, null);
    for (List<String> check : List.of(List.of("ip", "-V"), List.of("nft", "--version"))) {
      Result r = runQuietly(check);
      if (r.exit != 0) throw new Unavailable(needs + ": `" + String.join(" ", check) + "` failed: " + r.output, null);
    }
    ThreadLocalRandom random = ThreadLocalRandom.current();
    String id = Integer.toHexString(0x1000 + random.nextInt(0xF000));
    PartitionNetwork net = new PartitionNetwork(id, "10." + (200 + random.nextInt(50)) + "." + random.nextInt(256));
    try {
      net.build();
    } catch (IllegalStateException e) {
      net.close();
      throw new Unavailable(needs + ": " + e.getMessage(), e);
    } catch (IOException | InterruptedException | RuntimeException e) {
      net.close();
      throw e;
    }
    return net;
  }

  private void build() throws IOException, InterruptedException {
    for (Side side : List.of(a, b)) {
      run("ip", "netns", "add", side.namespace);
      created.add(side.namespace);
      run("ip", "-n", side.namespace, "link", "set", "lo", "up");
    }
    uplink(a, "nw" + id + "a", prefix + ".1");
    uplink(b, "nw" + id + "b", prefix + ".5");
    String ca = "nw" + id + "ca";
    String cb = "nw" + id + "cb";
    run("ip", "link", "add", ca, "netns", a.namespace, "type", "veth", "peer", "name", cb, "netns", b.namespace);
    run("ip", "-n", a.namespace, "addr", "add", a.clusterHost + "/30", "dev", ca);
    run("ip", "-n", b.namespace, "addr", "add", b.clusterHost + "/30", "dev", cb);
    run("ip", "-n", a.namespace, "link", "set", ca, "up");
    run("ip", "-n", b.namespace, "link", "set", cb, "up");
  }

  /** A veth pair from the test's namespace ({@code gateway}) into the side's (the side's host, its default route). */
  private void uplink(Side side, String name, String gateway) throws IOException, InterruptedException {
    String inside = name + "n";
    run("ip", "link", "add", name, "type", "veth", "peer", "name", inside, "netns", side.namespace);
    run("ip", "addr", "add", gateway + "/30", "dev", name);
    run("ip", "link", "set", name, "up");
    run("ip", "-n", side.namespace, "addr", "add", side.host + "/30", "dev", inside);
    run("ip", "-n", side.namespace, "link", "set", inside, "up");
    run("ip", "-n", side.namespace, "route", "add", "default", "via", gateway);
  }

  /** Where both sides reach the engines (which listen on every address of the test's namespace). */
  public String engineHost() {
    return prefix + ".1";
  }

  /** Cuts the cluster link: from now on every packet either side sends to the other side's cluster address is dropped. */
  public void partition() throws IOException, InterruptedException {
    drop(a, TABLE, "ip daddr " + b.clusterHost + " drop");
    drop(b, TABLE, "ip daddr " + a.clusterHost + " drop");
  }

  /** Heals the partition: the drop rules go, the sides reach each other again. */
  public void heal() throws IOException, InterruptedException {
    for (Side side : List.of(a, b)) run("ip", "netns", "exec", side.namespace, "nft", "delete", "table", "inet", TABLE);
  }

  /** Makes one engine port unreachable from {@code side} only (connections refused), as a broken route to one engine is. */
  public void cutEngine(Side side, int port) throws IOException, InterruptedException {
    drop(side, CUT_TABLE, "ip daddr " + engineHost() + " tcp dport " + port + " reject with tcp reset");
  }

  public void restoreEngine(Side side) throws IOException, InterruptedException {
    run("ip", "netns", "exec", side.namespace, "nft", "delete", "table", "inet", CUT_TABLE);
  }

  private static void drop(Side side, String table, String rule) throws IOException, InterruptedException {
    String script = "table inet " + table + " {\n  chain out {\n    type filter hook output priority 0; policy accept;\n    " + rule
        + "\n  }\n}\n";
    Process nft = new ProcessBuilder("ip", "netns", "exec", side.namespace, "nft", "-f", "-").redirectErrorStream(true).start();
    nft.getOutputStream().write(script.getBytes(StandardCharsets.UTF_8));
    nft.getOutputStream().close();
    String out = new String(nft.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!nft.waitFor(30, TimeUnit.SECONDS) || nft.exitValue() != 0) {
      throw new IllegalStateException("nft in " + side.namespace + " refused\n" + script + out);
    }
  }

  /** Deletes the namespaces: their veths (and the uplinks' ends in the test's namespace) and rules go with them. */
  @Override
  public void close() {
    for (String namespace : created) {
      try {
        runQuietly(List.of("ip", "netns", "del", namespace));
      } catch (IOException | InterruptedException e) {
        // best effort: the next step still runs
      }
    }
    created.clear();
  }

  private record Result(int exit, String output) {
  }

  private static void run(String... command) throws IOException, InterruptedException {
    Result r = runQuietly(List.of(command));
    if (r.exit != 0) throw new IllegalStateException("`" + String.join(" ", command) + "` failed (exit " + r.exit + "): " + r.output);
  }

  private static Result runQuietly(List<String> command) throws IOException, InterruptedException {
    Process p;
    try {
      p = new ProcessBuilder(command).redirectErrorStream(true).start();
    } catch (IOException notFound) {
      return new Result(127, notFound.getMessage());
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return new Result(-1, "timed out\n" + out);
    }
    return new Result(p.exitValue(), out.strip());
  }
}
