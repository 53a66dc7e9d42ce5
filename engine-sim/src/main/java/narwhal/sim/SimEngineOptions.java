package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/**
 * Configuration of one simulated vLLM engine: identity (name, role, model, engine id), network
 * (host, inference port, KV side-channel port), KV cache geometry and lease, latency model and
 * the fault rules active from the start.
 *
 * <p>A Vert.x-style data object: fluent setters, {@code DEFAULT_*} constants, a copy
 * constructor, a {@link JsonObject} constructor and {@link #toJson()}. JSON keys are the
 * camelCase property names; snake_case aliases ({@code kv_lease_seconds}) are accepted too.
 */
public final class SimEngineOptions {

  public static final String DEFAULT_NAME = "sim";
  public static final String DEFAULT_ROLE = "both";
  public static final String DEFAULT_MODEL = "Qwen/Qwen3-0.6B";
  public static final String DEFAULT_HOST = "127.0.0.1";
  public static final int DEFAULT_PORT = 0;
  public static final int DEFAULT_SIDE_CHANNEL_PORT = 0;
  public static final long DEFAULT_KV_LEASE_SECONDS = 30;
  public static final int DEFAULT_BLOCK_SIZE = 16;
  public static final int DEFAULT_TOTAL_BLOCKS = 4096;
  public static final boolean DEFAULT_FLAT_BLOCK_IDS = false;
  public static final int DEFAULT_MAX_MODEL_LEN = 4096;
  public static final String DEFAULT_VERSION = "0.29.0";
  public static final String DEFAULT_KV_LOAD_FAILURE_POLICY = "recompute";
  public static final double DEFAULT_TTFT_BASE_MS = 0;
  public static final double DEFAULT_TTFT_PER_PROMPT_TOKEN_MS = 0;
  public static final double DEFAULT_ITL_MS = 0;
  public static final double DEFAULT_ITL_PER_RUNNING_MS = 0;
  public static final double DEFAULT_KV_TRANSFER_PER_BLOCK_MS = 0;
  public static final int DEFAULT_REQUEST_LOG_LIMIT = 10_000;
  public static final String DEFAULT_REASONING_FIELD = "";
  public static final String DEFAULT_API_KEY = "";
  public static final boolean DEFAULT_PREFIX_CACHING = true;
  public static final int DEFAULT_MAX_NUM_SEQS = 256;
  public static final int DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192;
  public static final boolean DEFAULT_ENABLE_PROMPT_TOKENS_DETAILS = false;
  public static final String DEFAULT_LATENCY_PROFILE = "";

  /** The names {@code latencyProfile} accepts besides empty (the zero model). */
  public static Set<String> latencyProfiles() {
    return LatencyProfile.nameSet();
  }

  static final Set<String> ROLES = Set.of("prefill", "decode", "both");
  static final Set<String> KV_POLICIES = Set.of("recompute", "fail");
  static final Set<String> REASONING_FIELDS = Set.of("", "reasoning", "reasoning_content");

  private String name = DEFAULT_NAME;
  private String role = DEFAULT_ROLE;
  private String model = DEFAULT_MODEL;
  /** vLLM's {@code --served-model-name}: the names clients use (empty: the model itself). */
  private List<String> servedModelNames = List.of();
  /** vLLM's {@code --lora-modules name=path}: adapter name → path, in order. */
  private Map<String, String> loraModules = new LinkedHashMap<>();
  private String host = DEFAULT_HOST;
  private int port = DEFAULT_PORT;
  private int sideChannelPort = DEFAULT_SIDE_CHANNEL_PORT;
  private String engineId = UUID.randomUUID().toString();
  private long kvLeaseSeconds = DEFAULT_KV_LEASE_SECONDS;
  private int blockSize = DEFAULT_BLOCK_SIZE;
  private int totalBlocks = DEFAULT_TOTAL_BLOCKS;
  private boolean flatBlockIds = DEFAULT_FLAT_BLOCK_IDS;
  private int maxModelLen = DEFAULT_MAX_MODEL_LEN;
  private String version = DEFAULT_VERSION;
  private String kvLoadFailurePolicy = DEFAULT_KV_LOAD_FAILURE_POLICY;
  private double ttftBaseMs = DEFAULT_TTFT_BASE_MS;
  private double ttftPerPromptTokenMs = DEFAULT_TTFT_PER_PROMPT_TOKEN_MS;
  private double itlMs = DEFAULT_ITL_MS;
  private double itlPerRunningMs = DEFAULT_ITL_PER_RUNNING_MS;
  private double kvTransferPerBlockMs = DEFAULT_KV_TRANSFER_PER_BLOCK_MS;
  private int requestLogLimit = DEFAULT_REQUEST_LOG_LIMIT;
  private String reasoningField = DEFAULT_REASONING_FIELD;
  private volatile String apiKey = DEFAULT_API_KEY;
  private boolean prefixCaching = DEFAULT_PREFIX_CACHING;
  private boolean logTokenize;
  private int maxNumSeqs = DEFAULT_MAX_NUM_SEQS;
  private int maxNumBatchedTokens = DEFAULT_MAX_NUM_BATCHED_TOKENS;
  private boolean enablePromptTokensDetails = DEFAULT_ENABLE_PROMPT_TOKENS_DETAILS;
  private String latencyProfile = DEFAULT_LATENCY_PROFILE;
  private JsonArray faults = new JsonArray();
  private JsonObject descriptorExtras = new JsonObject();

  public SimEngineOptions() {
  }

  public SimEngineOptions(SimEngineOptions other) {
    this(other.toJson());
  }

  public SimEngineOptions(JsonObject json) {
    name = json.getString("name", name);
    role = json.getString("role", role);
    model = json.getString("model", model);
    JsonArray names = json.getJsonArray("servedModelNames", json.getJsonArray("served_model_name"));
    if (names != null) servedModelNames = names.stream().map(String::valueOf).toList();
    JsonObject loras = json.getJsonObject("loraModules", json.getJsonObject("lora_modules"));
    if (loras != null) loras.forEach(e -> loraModules.put(e.getKey(), String.valueOf(e.getValue())));
    host = json.getString("host", host);
    port = intOf(json, "port", null, port);
    sideChannelPort = intOf(json, "sideChannelPort", "side_channel_port", sideChannelPort);
    engineId = stringOf(json, "engineId", "engine_id", engineId);
    kvLeaseSeconds = longOf(json, "kvLeaseSeconds", "kv_lease_seconds", kvLeaseSeconds);
    blockSize = intOf(json, "blockSize", "block_size", blockSize);
    totalBlocks = intOf(json, "totalBlocks", "total_blocks", totalBlocks);
    flatBlockIds = boolOf(json, "flatBlockIds", "flat_block_ids", flatBlockIds);
    maxModelLen = intOf(json, "maxModelLen", "max_model_len", maxModelLen);
    version = json.getString("version", version);
    kvLoadFailurePolicy = stringOf(json, "kvLoadFailurePolicy", "kv_load_failure_policy", kvLoadFailurePolicy);
    ttftBaseMs = doubleOf(json, "ttftBaseMs", "ttft_base_ms", ttftBaseMs);
    ttftPerPromptTokenMs = doubleOf(json, "ttftPerPromptTokenMs", "ttft_per_prompt_token_ms", ttftPerPromptTokenMs);
    itlMs = doubleOf(json, "itlMs", "itl_ms", itlMs);
    itlPerRunningMs = doubleOf(json, "itlPerRunningMs", "itl_per_running_ms", itlPerRunningMs);
    kvTransferPerBlockMs = doubleOf(json, "kvTransferPerBlockMs", "kv_transfer_per_block_ms", kvTransferPerBlockMs);
    requestLogLimit = intOf(json, "requestLogLimit", "request_log_limit", requestLogLimit);
    reasoningField = stringOf(json, "reasoningField", "reasoning_field", reasoningField);
    apiKey = stringOf(json, "apiKey", "api_key", apiKey);
    prefixCaching = boolOf(json, "prefixCaching", "prefix_caching", prefixCaching);
    logTokenize = boolOf(json, "logTokenize", "log_tokenize", logTokenize);
    maxNumSeqs = intOf(json, "maxNumSeqs", "max_num_seqs", maxNumSeqs);
    maxNumBatchedTokens = intOf(json, "maxNumBatchedTokens", "max_num_batched_tokens", maxNumBatchedTokens);
    enablePromptTokensDetails = boolOf(json, "enablePromptTokensDetails", "enable_prompt_tokens_details",
      enablePromptTokensDetails);
    latencyProfile = stringOf(json, "latencyProfile", "latency_profile", latencyProfile);
    JsonArray f = json.getJsonArray("faults");
    faults = f == null ? new JsonArray() : f.copy();
    JsonObject extras = json.getJsonObject("descriptorExtras", json.getJsonObject("descriptor_extras"));
    descriptorExtras = extras == null ? new JsonObject() : extras.copy();
  }

  /** Checks ranges and enumerations; throws {@link IllegalArgumentException} naming the key. */
  public SimEngineOptions validate() {
    require(name != null && !name.isEmpty(), "name", name, "a non-empty string");
    require(ROLES.contains(role), "role", role, "prefill, decode or both");
    require(model != null && !model.isEmpty(), "model", model, "a non-empty string");
    require(servedModelNames.stream().noneMatch(String::isBlank), "servedModelNames", servedModelNames, "non-empty names");
    require(loraModules.keySet().stream().noneMatch(n -> n.isBlank() || servedNames().contains(n)), "loraModules",
      loraModules, "adapter names, none empty nor a served model name");
    require(host != null && !host.isEmpty(), "host", host, "a non-empty string");
    require(port >= 0 && port <= 65535, "port", port, "0..65535");
    require(sideChannelPort >= 0 && sideChannelPort <= 65535, "sideChannelPort", sideChannelPort, "0..65535");
    require(engineId != null && !engineId.isEmpty(), "engineId", engineId, "a non-empty string");
    require(kvLeaseSeconds >= 0, "kvLeaseSeconds", kvLeaseSeconds, ">= 0");
    require(blockSize >= 1, "blockSize", blockSize, ">= 1");
    require(totalBlocks >= 1, "totalBlocks", totalBlocks, ">= 1");
    require(maxModelLen >= 1, "maxModelLen", maxModelLen, ">= 1");
    require(KV_POLICIES.contains(kvLoadFailurePolicy), "kvLoadFailurePolicy", kvLoadFailurePolicy, "recompute or fail");
    require(ttftBaseMs >= 0, "ttftBaseMs", ttftBaseMs, ">= 0");
    require(ttftPerPromptTokenMs >= 0, "ttftPerPromptTokenMs", ttftPerPromptTokenMs, ">= 0");
    require(itlMs >= 0, "itlMs", itlMs, ">= 0");
    require(itlPerRunningMs >= 0, "itlPerRunningMs", itlPerRunningMs, ">= 0");
    require(kvTransferPerBlockMs >= 0, "kvTransferPerBlockMs", kvTransferPerBlockMs, ">= 0");
    require(requestLogLimit >= 0, "requestLogLimit", requestLogLimit, ">= 0 (0 = unlimited)");
    require(REASONING_FIELDS.contains(reasoningField), "reasoningField", reasoningField,
      "reasoning, reasoning_content or empty (no reasoning parser)");
    require(apiKey != null, "apiKey", apiKey, "a string (empty: no key)");
    require(maxNumSeqs >= 1, "maxNumSeqs", maxNumSeqs, ">= 1");
    require(maxNumBatchedTokens >= 1, "maxNumBatchedTokens", maxNumBatchedTokens, ">= 1");
    require(latencyProfile != null && (latencyProfile.isEmpty() || LatencyProfile.named(latencyProfile) != null),
      "latencyProfile", latencyProfile, "empty (the zero model) or one of " + LatencyProfile.names());
    for (Object rule : faults) {
      require(rule instanceof JsonObject, "faults", rule, "an array of fault rule objects");
      new FaultRule((JsonObject) rule);
    }
    return this;
  }

  public JsonObject toJson() {
    return new JsonObject()
      .put("name", name)
      .put("role", role)
      .put("model", model)
      .put("servedModelNames", new JsonArray(new java.util.ArrayList<>(servedModelNames)))
      .put("loraModules", new JsonObject(new LinkedHashMap<String, Object>(loraModules)))
      .put("host", host)
      .put("port", port)
      .put("sideChannelPort", sideChannelPort)
      .put("engineId", engineId)
      .put("kvLeaseSeconds", kvLeaseSeconds)
      .put("blockSize", blockSize)
      .put("totalBlocks", totalBlocks)
      .put("flatBlockIds", flatBlockIds)
      .put("maxModelLen", maxModelLen)
      .put("version", version)
      .put("kvLoadFailurePolicy", kvLoadFailurePolicy)
      .put("ttftBaseMs", ttftBaseMs)
      .put("ttftPerPromptTokenMs", ttftPerPromptTokenMs)
      .put("itlMs", itlMs)
      .put("itlPerRunningMs", itlPerRunningMs)
      .put("kvTransferPerBlockMs", kvTransferPerBlockMs)
      .put("requestLogLimit", requestLogLimit)
      .put("reasoningField", reasoningField)
      .put("apiKey", apiKey)
      .put("prefixCaching", prefixCaching)
      .put("logTokenize", logTokenize)
      .put("maxNumSeqs", maxNumSeqs)
      .put("maxNumBatchedTokens", maxNumBatchedTokens)
      .put("enablePromptTokensDetails", enablePromptTokensDetails)
      .put("latencyProfile", latencyProfile)
      .put("faults", faults.copy())
      .put("descriptorExtras", descriptorExtras.copy());
  }

  public String getName() { return name; }
  public SimEngineOptions setName(String name) { this.name = name; return this; }

  /** {@code prefill}, {@code decode} or {@code both}; reported in attestation, not enforced. */
  public String getRole() { return role; }
  public SimEngineOptions setRole(String role) { this.role = role; return this; }

  public String getModel() { return model; }
  public SimEngineOptions setModel(String model) { this.model = model; return this; }

  /** vLLM's {@code --served-model-name}; empty: the model itself. */
  public List<String> getServedModelNames() { return servedModelNames; }
  public SimEngineOptions setServedModelNames(List<String> names) { this.servedModelNames = List.copyOf(names); return this; }

  /** vLLM's {@code --lora-modules}: adapter name → path. */
  public Map<String, String> getLoraModules() { return java.util.Collections.unmodifiableMap(loraModules); }
  public SimEngineOptions setLoraModules(Map<String, String> modules) { this.loraModules = new LinkedHashMap<>(modules); return this; }

  /** The names the engine answers to, as vLLM's {@code base_model_paths}: the served names, else the model. */
  public List<String> servedNames() {
    return servedModelNames.isEmpty() ? List.of(model) : servedModelNames;
  }

  /** Whether a request may name {@code name}: a served name or a LoRA adapter. */
  public boolean serves(String name) {
    return servedNames().contains(name) || loraModules.containsKey(name);
  }

  /** The {@code model} vLLM writes in its answer: the adapter's name, else the first served name. */
  public String answerModel(String requested) {
    return requested != null && loraModules.containsKey(requested) ? requested : servedNames().get(0);
  }

  public String getHost() { return host; }
  public SimEngineOptions setHost(String host) { this.host = host; return this; }

  /** Inference HTTP port; 0 picks a random free port. */
  public int getPort() { return port; }
  public SimEngineOptions setPort(int port) { this.port = port; return this; }

  /** KV side-channel port (the simulated NIXL handshake/pull); 0 picks a random free port. */
  public int getSideChannelPort() { return sideChannelPort; }
  public SimEngineOptions setSideChannelPort(int sideChannelPort) { this.sideChannelPort = sideChannelPort; return this; }

  public String getEngineId() { return engineId; }
  public SimEngineOptions setEngineId(String engineId) { this.engineId = engineId; return this; }

  /** Lease of produced KV blocks, in seconds of the engine's clock; 0 = never expires. */
  public long getKvLeaseSeconds() { return kvLeaseSeconds; }
  public SimEngineOptions setKvLeaseSeconds(long kvLeaseSeconds) { this.kvLeaseSeconds = kvLeaseSeconds; return this; }

  public int getBlockSize() { return blockSize; }
  public SimEngineOptions setBlockSize(int blockSize) { this.blockSize = blockSize; return this; }

  public int getTotalBlocks() { return totalBlocks; }
  public SimEngineOptions setTotalBlocks(int totalBlocks) { this.totalBlocks = totalBlocks; return this; }

  /** When true, {@code remote_block_ids} is a flat {@code [int]} (older NIXL) instead of {@code [[int]]}. */
  public boolean isFlatBlockIds() { return flatBlockIds; }
  public SimEngineOptions setFlatBlockIds(boolean flatBlockIds) { this.flatBlockIds = flatBlockIds; return this; }

  public int getMaxModelLen() { return maxModelLen; }
  public SimEngineOptions setMaxModelLen(int maxModelLen) { this.maxModelLen = maxModelLen; return this; }

  /**
   * The reasoning parser's output field, as vLLM's {@code --reasoning-parser} names it: {@code reasoning} (current
   * vLLM) or {@code reasoning_content} (older); empty: no reasoning parser, chat output is all content.
   */
  public String getReasoningField() { return reasoningField; }
  public SimEngineOptions setReasoningField(String reasoningField) { this.reasoningField = reasoningField; return this; }

  /** Like vLLM's {@code --api-key}: when non-empty, {@code /v1/*} answers 401 without {@code Authorization: Bearer <key>}. */
  public String getApiKey() { return apiKey; }
  public SimEngineOptions setApiKey(String apiKey) { this.apiKey = apiKey; return this; }

  /** vLLM's automatic prefix caching ({@code --no-prefix-caching} turns it off): repeated prompt blocks cost no prefill. */
  public boolean isPrefixCaching() { return prefixCaching; }
  public SimEngineOptions setPrefixCaching(boolean prefixCaching) { this.prefixCaching = prefixCaching; return this; }
  /**
   * Whether {@code POST /tokenize} bodies join the request log (phase {@code tokenize}); off by default, as a router's
   * context check asks {@code /tokenize} before most requests and would crowd the legs' entries.
   */
  public boolean isLogTokenize() { return logTokenize; }
  public SimEngineOptions setLogTokenize(boolean logTokenize) { this.logTokenize = logTokenize; return this; }

  /** vLLM's {@code --max-num-seqs}: sequences in the running batch at most; more wait in arrival order. */
  public int getMaxNumSeqs() { return maxNumSeqs; }
  public SimEngineOptions setMaxNumSeqs(int maxNumSeqs) { this.maxNumSeqs = maxNumSeqs; return this; }

  /** vLLM's {@code --max-num-batched-tokens}: tokens one engine step computes at most (prefill is chunked to fit). */
  public int getMaxNumBatchedTokens() { return maxNumBatchedTokens; }
  public SimEngineOptions setMaxNumBatchedTokens(int tokens) { this.maxNumBatchedTokens = tokens; return this; }

  /** vLLM's {@code --enable-prompt-tokens-details}: usage carries {@code prompt_tokens_details.cached_tokens}. */
  public boolean isEnablePromptTokensDetails() { return enablePromptTokensDetails; }
  public SimEngineOptions setEnablePromptTokensDetails(boolean enable) { this.enablePromptTokensDetails = enable; return this; }

  /**
   * A named latency model from a published vLLM measurement ({@link LatencyProfile}); it supplies the TTFT and ITL
   * terms left at zero. Empty: the zero model.
   */
  public String getLatencyProfile() { return latencyProfile; }
  public SimEngineOptions setLatencyProfile(String latencyProfile) { this.latencyProfile = latencyProfile; return this; }

  /** A copy whose zero latency terms are filled from {@link #getLatencyProfile()} (this copy when there is none). */
  SimEngineOptions withProfileApplied() {
    LatencyProfile profile = latencyProfile.isEmpty() ? null : LatencyProfile.named(latencyProfile);
    if (profile == null) {
      return this;
    }
    SimEngineOptions out = new SimEngineOptions(this);
    if (out.ttftBaseMs == 0) out.ttftBaseMs = profile.ttftBaseMs();
    if (out.ttftPerPromptTokenMs == 0) out.ttftPerPromptTokenMs = profile.ttftPerPromptTokenMs();
    if (out.itlMs == 0) out.itlMs = profile.itlMs();
    if (out.itlPerRunningMs == 0) out.itlPerRunningMs = profile.itlPerRunningMs();
    return out;
  }

  public String getVersion() { return version; }
  public SimEngineOptions setVersion(String version) { this.version = version; return this; }

  /** {@code recompute} (silently prefill locally) or {@code fail} (500 / error frame) on a KV transfer error. */
  public String getKvLoadFailurePolicy() { return kvLoadFailurePolicy; }
  public SimEngineOptions setKvLoadFailurePolicy(String kvLoadFailurePolicy) { this.kvLoadFailurePolicy = kvLoadFailurePolicy; return this; }

  public double getTtftBaseMs() { return ttftBaseMs; }
  public SimEngineOptions setTtftBaseMs(double ttftBaseMs) { this.ttftBaseMs = ttftBaseMs; return this; }

  public double getTtftPerPromptTokenMs() { return ttftPerPromptTokenMs; }
  public SimEngineOptions setTtftPerPromptTokenMs(double ms) { this.ttftPerPromptTokenMs = ms; return this; }

  public double getItlMs() { return itlMs; }
  public SimEngineOptions setItlMs(double itlMs) { this.itlMs = itlMs; return this; }

  public double getItlPerRunningMs() { return itlPerRunningMs; }
  public SimEngineOptions setItlPerRunningMs(double itlPerRunningMs) { this.itlPerRunningMs = itlPerRunningMs; return this; }

  public double getKvTransferPerBlockMs() { return kvTransferPerBlockMs; }
  public SimEngineOptions setKvTransferPerBlockMs(double ms) { this.kvTransferPerBlockMs = ms; return this; }

  /** Most entries kept by {@link SimEngine#requests()} (oldest dropped first); 0 = unlimited. */
  public int getRequestLogLimit() { return requestLogLimit; }
  public SimEngineOptions setRequestLogLimit(int requestLogLimit) { this.requestLogLimit = requestLogLimit; return this; }

  /** Fault rules (see {@link FaultRule}) installed when the engine starts. */
  public JsonArray getFaults() { return faults; }
  public SimEngineOptions setFaults(JsonArray faults) { this.faults = faults == null ? new JsonArray() : faults; return this; }
  public SimEngineOptions addFault(JsonObject rule) { faults.add(rule); return this; }

  /** Fields added to every handoff descriptor this engine returns: newer engines' keys a router does not know. */
  public JsonObject getDescriptorExtras() { return descriptorExtras; }
  public SimEngineOptions setDescriptorExtras(JsonObject extras) { this.descriptorExtras = extras == null ? new JsonObject() : extras; return this; }

  @Override
  public String toString() {
    return toJson().encode();
  }

  private static void require(boolean ok, String key, Object value, String expected) {
    if (!ok) {
      throw new IllegalArgumentException("invalid engine option " + key + "=" + value + ": expected " + expected);
    }
  }

  private static Object valueOf(JsonObject json, String key, String alias) {
    Object v = json.getValue(key);
    if (v == null && alias != null) {
      v = json.getValue(alias);
    }
    return v;
  }

  private static String stringOf(JsonObject json, String key, String alias, String def) {
    Object v = valueOf(json, key, alias);
    return v == null ? def : v.toString();
  }

  private static int intOf(JsonObject json, String key, String alias, int def) {
    Object v = valueOf(json, key, alias);
    return v instanceof Number ? ((Number) v).intValue() : def;
  }

  private static long longOf(JsonObject json, String key, String alias, long def) {
    Object v = valueOf(json, key, alias);
    return v instanceof Number ? ((Number) v).longValue() : def;
  }

  private static double doubleOf(JsonObject json, String key, String alias, double def) {
    Object v = valueOf(json, key, alias);
    return v instanceof Number ? ((Number) v).doubleValue() : def;
  }

  private static boolean boolOf(JsonObject json, String key, String alias, boolean def) {
    Object v = valueOf(json, key, alias);
    return v instanceof Boolean ? (Boolean) v : def;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SimEngineOptions && toJson().equals(((SimEngineOptions) o).toJson());
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, engineId, port);
  }
}
