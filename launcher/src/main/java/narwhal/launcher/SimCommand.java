package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import narwhal.sim.SimEngineOptions;
import narwhal.sim.SimFleet;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code narwhal sim}: a simulated vLLM fleet on consecutive ports, for demos, benchmarks and manual tests. */
@Command(name = "sim", mixinStandardHelpOptions = true,
    description = "Run simulated vLLM engines; engine k listens on --base-port + k.")
final class SimCommand implements Callable<Integer> {
  @Option(names = "--engines", defaultValue = "1", description = "number of engines (default: ${DEFAULT-VALUE})")
  int engines;

  @Option(names = "--roles", split = ",", description = "role per engine: prefill, decode or both (default: both for all)")
  List<String> roles = new ArrayList<>();

  @Option(names = "--base-port", defaultValue = "8100", description = "engine k listens on base-port + k (default: ${DEFAULT-VALUE})")
  int basePort;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "listen address (default: ${DEFAULT-VALUE})")
  String host;

  @Option(names = "--model", defaultValue = SimEngineOptions.DEFAULT_MODEL, description = "served model (default: ${DEFAULT-VALUE})")
  String model;

  @Option(names = "--kv-lease-seconds", defaultValue = "30", description = "producer KV lease (default: ${DEFAULT-VALUE})")
  long leaseSeconds;

  @Option(names = "--ttft-ms", defaultValue = "0", description = "base time to first token (default: ${DEFAULT-VALUE})")
  double ttftMs;

  @Option(names = "--itl-ms", defaultValue = "0", description = "inter-token latency (default: ${DEFAULT-VALUE})")
  double itlMs;

  @Option(names = "--api-key", defaultValue = "", description = "like vLLM's --api-key: /v1/* answers 401 without "
      + "'Authorization: Bearer <key>'; /health stays open (default: no key)")
  String apiKey;

  @Option(names = "--reasoning-field", defaultValue = "", description = "run a reasoning parser: chat output starts with "
      + "reasoning deltas under this field, reasoning (current vLLM) or reasoning_content (older) (default: none)")
  String reasoningField;

  @Override
  public Integer call() {
    if (engines < 1) throw new CommandFailure("--engines: " + engines + " is not valid: expected at least 1");
    if (!roles.isEmpty() && roles.size() != engines) {
      throw new CommandFailure("--roles: " + roles.size() + " role(s) given for " + engines + " engine(s): expected one per engine");
    }
    List<SimEngineOptions> options = new ArrayList<>();
    for (int k = 0; k < engines; k++) {
      String role = roles.isEmpty() ? "both" : roles.get(k);
      if (!List.of("prefill", "decode", "both").contains(role)) {
        throw new CommandFailure("--roles: \"" + role + "\" is not valid: expected prefill, decode or both");
      }
      options.add(new SimEngineOptions().setName("sim" + k).setRole(role).setModel(model).setHost(host).setPort(basePort + k)
          .setKvLeaseSeconds(leaseSeconds).setTtftBaseMs(ttftMs).setItlMs(itlMs)
          .setApiKey(apiKey).setReasoningField(reasoningField));
    }
    Vertx vertx = Vertx.vertx();
    SimFleet fleet = Blocking.await(SimFleet.start(vertx, options).recover(err -> vertx.close().transform(v -> Future.failedFuture(err))));
    System.out.printf("%-6s %-8s %-28s %s%n", "engine", "role", "url", "kv side channel");
    fleet.engines().forEach(e -> System.out.printf("%-6s %-8s %-28s %s:%d%n", e.options().getName(), e.options().getRole(),
        e.url(), host, e.sideChannelPort()));
    System.out.println("simulated fleet ready; Ctrl-C stops it");
    Blocking.parkUntilInterrupted(() -> Blocking.await(fleet.close().eventually(vertx::close)));
    return 0;
  }
}
