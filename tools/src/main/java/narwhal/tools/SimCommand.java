package narwhal.tools;

import narwhal.launcher.CommandFailure;
import narwhal.launcher.Blocking;

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

  @Option(names = "--served-model-name", split = ",", description = "like vLLM's: the names clients use for the model, "
      + "comma-separated (default: the model)")
  List<String> servedModelNames = new ArrayList<>();

  @Option(names = "--lora-modules", description = "like vLLM's: a LoRA adapter as name=path, listed in /v1/models with the "
      + "first served name as parent; repeat for more")
  List<String> loraModules = new ArrayList<>();

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

  @Option(names = "--ttft-per-token-ms", defaultValue = "0", description = "prefill cost per uncached prompt token "
      + "(default: ${DEFAULT-VALUE})")
  double ttftPerTokenMs;

  @Option(names = "--itl-per-running-ms", defaultValue = "0", description = "step time added per sequence in the batch "
      + "(default: ${DEFAULT-VALUE})")
  double itlPerRunningMs;

  @Option(names = "--latency-profile", defaultValue = "", description = "a latency model fitted to a published vLLM "
      + "measurement (docs/simulator.md): qwen2.5-0.5b-l4; fills the latency terms left at 0 (default: the zero model)")
  String latencyProfile;

  @Option(names = "--no-prefix-caching", description = "like vLLM's flag: turn automatic prefix caching off")
  boolean noPrefixCaching;

  @Option(names = "--max-num-seqs", defaultValue = "" + SimEngineOptions.DEFAULT_MAX_NUM_SEQS,
      description = "like vLLM's: sequences in the running batch at most; more wait (default: ${DEFAULT-VALUE})")
  int maxNumSeqs;

  @Option(names = "--max-num-batched-tokens", defaultValue = "" + SimEngineOptions.DEFAULT_MAX_NUM_BATCHED_TOKENS,
      description = "like vLLM's: tokens per engine step at most; longer prefills are chunked (default: ${DEFAULT-VALUE})")
  int maxNumBatchedTokens;

  @Option(names = "--enable-prompt-tokens-details", description = "like vLLM's flag: usage carries "
      + "prompt_tokens_details.cached_tokens")
  boolean promptTokensDetails;

  @Option(names = "--block-size", defaultValue = "" + SimEngineOptions.DEFAULT_BLOCK_SIZE,
      description = "tokens per KV block (default: ${DEFAULT-VALUE})")
  int blockSize;

  @Option(names = "--num-gpu-blocks", defaultValue = "" + SimEngineOptions.DEFAULT_TOTAL_BLOCKS,
      description = "KV blocks per engine, the prefix cache's room (default: ${DEFAULT-VALUE})")
  int totalBlocks;

  /** The engines' options from the flags; a {@link CommandFailure} naming the flag or option when one is not valid. */
  List<SimEngineOptions> engineOptions() {
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
      options.add(new SimEngineOptions().setName("sim" + k).setRole(role).setModel(model).setServedModelNames(servedModelNames)
          .setLoraModules(loras()).setHost(host).setPort(basePort + k)
          .setKvLeaseSeconds(leaseSeconds).setTtftBaseMs(ttftMs).setItlMs(itlMs)
          .setApiKey(apiKey).setReasoningField(reasoningField).setTtftPerPromptTokenMs(ttftPerTokenMs)
          .setItlPerRunningMs(itlPerRunningMs).setLatencyProfile(latencyProfile).setPrefixCaching(!noPrefixCaching)
          .setMaxNumSeqs(maxNumSeqs).setMaxNumBatchedTokens(maxNumBatchedTokens).setEnablePromptTokensDetails(promptTokensDetails)
          .setBlockSize(blockSize).setTotalBlocks(totalBlocks));
    }
    try {
      options.forEach(SimEngineOptions::validate);
    } catch (IllegalArgumentException e) {
      throw new CommandFailure(e.getMessage());
    }
    return options;
  }

  /** {@code --lora-modules name=path}, in order; a {@link CommandFailure} for one without its {@code =}. */
  private java.util.Map<String, String> loras() {
    java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
    for (String module : loraModules) {
      int eq = module.indexOf('=');
      if (eq <= 0 || eq == module.length() - 1) {
        throw new CommandFailure("--lora-modules: \"" + module + "\" is not valid: expected name=path");
      }
      out.put(module.substring(0, eq), module.substring(eq + 1));
    }
    return out;
  }

  @Override
  public Integer call() {
    List<SimEngineOptions> options = engineOptions();
    Vertx vertx = Vertx.vertx();
    SimFleet fleet = Blocking.await(SimFleet.start(vertx, options).recover(err -> vertx.close().transform(v -> Future.failedFuture(err))));
    System.out.printf("%-6s %-8s %-28s %s%n", "engine", "role", "url", "kv side channel");
    fleet.engines().forEach(e -> System.out.printf("%-6s %-8s %-28s %s:%d%n", e.options().getName(), e.options().getRole(),
        e.url(), host, e.sideChannelPort()));
    System.out.println("simulated fleet ready; Ctrl-C stops it");
    // SIGTERM stops the engines as vLLM's does: no new connection, running requests finish (30 s at most)
    Blocking.parkUntilInterrupted(() -> Blocking.await(fleet.shutDown(30_000).eventually(fleet::close).eventually(vertx::close)));
    return 0;
  }
}
