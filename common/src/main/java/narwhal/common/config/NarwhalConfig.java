package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The fleet file ({@code conf/narwhal.json}, docs/configuration.md) as one immutable, validated value: the
 * served model, the engines, the optional pinned engine contract and every tuning section with its
 * defaults applied. A file is accepted whole or refused whole with a {@link ConfigException}, which
 * is what lets a hot reload keep the last good configuration.
 */
public record NarwhalConfig(
    String model,
    List<EngineConfig> engines,
    JsonObject engineContract,
    ServerConfig server,
    ServingConfig serving,
    EngineSettings engine,
    RecoveryConfig recovery,
    ClusterConfig cluster,
    AdminConfig admin,
    JournalConfig journal,
    MetricsConfig metrics,
    SimConfig sim,
    PlacementConfig placement,
    TelemetryConfig telemetry,
    LoggingConfig logging,
    DiscoveryConfig discovery,
    FlowConfig flow,
    TenantsConfig tenants) {

  public static final String SCHEMA = "narwhal.fleet";
  public static final int SCHEMA_VERSION = 1;

  private static final String ENGINES_EXPECTATION = "a non-empty list of engines";

  static final Key<NarwhalConfig, String> SCHEMA_KEY = Key.text("schema", c -> SCHEMA, SCHEMA, SCHEMA::equals,
      "\"" + SCHEMA + "\"");
  static final Key<NarwhalConfig, Long> SCHEMA_VERSION_KEY = Key.whole("schema_version", c -> (long) SCHEMA_VERSION,
      (long) SCHEMA_VERSION, SCHEMA_VERSION, SCHEMA_VERSION, String.valueOf(SCHEMA_VERSION));
  static final Key<NarwhalConfig, String> MODEL = Key.nonEmpty("model", NarwhalConfig::model, null);
  /** Read by {@link #engines}: each entry is an object of {@link EngineConfig#SECTION}. */
  static final Key<NarwhalConfig, List<EngineConfig>> ENGINES = Key.custom("engines", Key.Type.LIST,
      NarwhalConfig::engines, list -> new JsonArray(new ArrayList<>(list.stream().map(EngineConfig::toJson).toList())));
  static final Key<NarwhalConfig, JsonObject> ENGINE_CONTRACT = Key.custom("engine_contract", Key.Type.OBJECT,
      NarwhalConfig::engineContract, c -> c);
  static final Key<NarwhalConfig, ServerConfig> SERVER = Key.section("server", NarwhalConfig::server,
      ServerConfig.SECTION, ServerConfig::read);
  static final Key<NarwhalConfig, ServingConfig> SERVING = Key.section("serving", NarwhalConfig::serving,
      ServingConfig.SECTION, r -> ServingConfig.read(r, null));
  static final Key<NarwhalConfig, EngineSettings> ENGINE = Key.section("engine", NarwhalConfig::engine,
      EngineSettings.SECTION, r -> EngineSettings.read(r, null));
  static final Key<NarwhalConfig, RecoveryConfig> RECOVERY = Key.section("recovery", NarwhalConfig::recovery,
      RecoveryConfig.SECTION, r -> RecoveryConfig.read(r, false));
  static final Key<NarwhalConfig, ClusterConfig> CLUSTER = Key.section("cluster", NarwhalConfig::cluster,
      ClusterConfig.SECTION, ClusterConfig::read);
  static final Key<NarwhalConfig, AdminConfig> ADMIN = Key.section("admin", NarwhalConfig::admin, AdminConfig.SECTION,
      AdminConfig::read);
  static final Key<NarwhalConfig, JournalConfig> JOURNAL = Key.section("journal", NarwhalConfig::journal,
      JournalConfig.SECTION, JournalConfig::read);
  static final Key<NarwhalConfig, MetricsConfig> METRICS = Key.section("metrics", NarwhalConfig::metrics,
      MetricsConfig.SECTION, MetricsConfig::read);
  static final Key<NarwhalConfig, SimConfig> SIM = Key.section("sim", NarwhalConfig::sim, SimConfig.SECTION,
      SimConfig::read);
  static final Key<NarwhalConfig, PlacementConfig> PLACEMENT = Key.section("placement", NarwhalConfig::placement,
      PlacementConfig.SECTION, PlacementConfig::read);
  static final Key<NarwhalConfig, TelemetryConfig> TELEMETRY = Key.section("telemetry", NarwhalConfig::telemetry,
      TelemetryConfig.SECTION, TelemetryConfig::read);
  static final Key<NarwhalConfig, LoggingConfig> LOGGING = Key.section("logging", NarwhalConfig::logging,
      LoggingConfig.SECTION, LoggingConfig::read);
  static final Key<NarwhalConfig, DiscoveryConfig> DISCOVERY = Key.section("discovery", NarwhalConfig::discovery,
      DiscoveryConfig.SECTION, DiscoveryConfig::read);
  static final Key<NarwhalConfig, FlowConfig> FLOW = Key.section("flow", NarwhalConfig::flow, FlowConfig.SECTION,
      FlowConfig::read);
  /** Read by {@link TenantsConfig#read}: tenant name to an object of {@link TenantConfig#SECTION}. */
  static final Key<NarwhalConfig, TenantsConfig> TENANTS = Key.custom("tenants", Key.Type.OBJECT,
      NarwhalConfig::tenants, TenantsConfig::toJson);
  /** Every key of the fleet file, in the order {@link #toJson} writes them. */
  public static final Section<NarwhalConfig> FILE = new Section<>(SCHEMA_KEY, SCHEMA_VERSION_KEY, MODEL, ENGINES,
      ENGINE_CONTRACT, SERVER, SERVING, ENGINE, RECOVERY, CLUSTER, ADMIN, JOURNAL, METRICS, SIM, PLACEMENT, TELEMETRY,
      LOGGING, DISCOVERY, FLOW, TENANTS);

  public NarwhalConfig {
    Objects.requireNonNull(model, "model");
    String fleetModel = model;
    engines = engines.stream().map(e -> e.model().isEmpty() ? e.withModel(fleetModel) : e).toList();
    engineContract = engineContract == null ? null : engineContract.copy();
    Objects.requireNonNull(server, "server");
    Objects.requireNonNull(serving, "serving");
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(recovery, "recovery");
    Objects.requireNonNull(cluster, "cluster");
    Objects.requireNonNull(admin, "admin");
    Objects.requireNonNull(journal, "journal");
    Objects.requireNonNull(metrics, "metrics");
    Objects.requireNonNull(sim, "sim");
    Objects.requireNonNull(placement, "placement");
    Objects.requireNonNull(telemetry, "telemetry");
    Objects.requireNonNull(logging, "logging");
    Objects.requireNonNull(discovery, "discovery");
    Objects.requireNonNull(flow, "flow");
    Objects.requireNonNull(tenants, "tenants");
  }

  /** Parses the text of a fleet file; text that is not a JSON object is refused as malformed. */
  public static NarwhalConfig parse(String text) {
    Object value = JsonText.decode(text);
    if (!(value instanceof JsonObject)) {
      throw ConfigException.malformed("expected an object at the top level");
    }
    return fromJson((JsonObject) value);
  }

  /** This configuration with {@code engines} in place of its own (the make-before-break of re-pointed engines). */
  public NarwhalConfig withEngines(List<EngineConfig> engines) {
    return new NarwhalConfig(model, engines, engineContract, server, serving, engine, recovery, cluster, admin, journal,
        metrics, sim, placement, telemetry, logging, discovery, flow, tenants);
  }

  public static NarwhalConfig fromJson(JsonObject json) {
    Objects.requireNonNull(json, "json");
    SectionReader r = SectionReader.of(json, "", FILE);
    r.get(SCHEMA_KEY);
    r.get(SCHEMA_VERSION_KEY);
    String model = r.get(MODEL);
    DiscoveryConfig discovery = r.get(DISCOVERY);
    List<EngineConfig> engines = engines(r, discovery.enabled());
    JsonObject engineContract = engineContract(r);
    ServerConfig server = r.get(SERVER);
    SectionReader serving = r.section(SERVING.name(), ServingConfig.SECTION);
    Integer legacyMaxConnections = ServingConfig.legacyMaxConnections(serving);
    ServingConfig servingConfig = ServingConfig.read(serving, legacyMaxConnections);
    EngineSettings engine = EngineSettings.read(r.section(ENGINE.name(), EngineSettings.SECTION), legacyMaxConnections);
    clientKeysAreNotTheEngineKey(server, engine);
    return new NarwhalConfig(model, engines, engineContract, server, servingConfig, engine,
        RecoveryConfig.read(r.section(RECOVERY.name(), RecoveryConfig.SECTION), engineContract != null),
        r.get(CLUSTER), r.get(ADMIN), r.get(JOURNAL), r.get(METRICS), r.get(SIM), r.get(PLACEMENT), r.get(TELEMETRY),
        r.get(LOGGING), discovery, r.get(FLOW), TenantsConfig.read(r));
  }

  /** The sections the admin command line reads (docs/operations.md#admin-commands). */
  public record AdminView(ClusterConfig cluster, AdminConfig admin) {
  }

  /** Reads and validates {@code cluster} and {@code admin} alone, whatever the rest of the file holds. */
  public static AdminView adminView(JsonObject json) {
    JsonObject cluster = json.getValue("cluster") instanceof JsonObject c ? c : new JsonObject();
    JsonObject admin = json.getValue("admin") instanceof JsonObject a ? a : new JsonObject();
    SectionReader r = SectionReader.of(new JsonObject().put("cluster", cluster).put("admin", admin), "", FILE);
    return new AdminView(r.get(CLUSTER), r.get(ADMIN));
  }

  /** The engines' key must never open the router to clients: the two keys cannot come from one variable or file. */
  private static void clientKeysAreNotTheEngineKey(ServerConfig server, EngineSettings engine) {
    String engineKey = engine.engineApiKey().lookupName();
    if (engineKey == null) return;
    for (SecretRef client : List.of(server.apiKey(), server.opsToken())) {
      if (engineKey.equals(client.lookupName())) {
        String value = client.file().isEmpty() ? client.env() : client.file();
        throw ConfigException.invalid(client.key(), value, (client.file().isEmpty() ? "a variable" : "a file") + " other than " + engine.engineApiKey().key()
            + " (the engines' key is never a client key)");
      }
    }
  }

  /** The file's engines; none is a valid list only when {@code discovered} (engines come from discovery). */
  private static List<EngineConfig> engines(SectionReader r, boolean discovered) {
    if (discovered && r.raw("engines") == null) return List.of();
    JsonArray array = r.array("engines", discovered ? "a list of engines (discovery adds more)" : ENGINES_EXPECTATION);
    if (array.isEmpty() && !discovered) {
      throw r.invalid("engines", ENGINES_EXPECTATION);
    }
    List<EngineConfig> engines = new ArrayList<>();
    Set<String> iids = new HashSet<>();
    for (int i = 0; i < array.size(); i++) {
      String key = "engines[" + i + "]";
      Object entry = array.getValue(i);
      if (!(entry instanceof JsonObject)) {
        throw ConfigException.invalid(key, entry, "an object");
      }
      EngineConfig engine = EngineConfig.read(SectionReader.of((JsonObject) entry, key, EngineConfig.SECTION));
      if (!iids.add(engine.iid())) {
        throw ConfigException.invalid(key + ".iid", engine.iid(), "a unique iid");
      }
      engines.add(engine);
    }
    return engines;
  }

  private static JsonObject engineContract(SectionReader r) {
    Object value = r.raw("engine_contract");
    if (value == null) {
      return null;
    }
    if (!(value instanceof JsonObject)) {
      throw r.invalid("engine_contract", "null or an object");
    }
    return (JsonObject) value;
  }

  /** A copy of the pinned engine facts, or null for a development fleet without a contract. */
  @Override
  public JsonObject engineContract() {
    return engineContract == null ? null : engineContract.copy();
  }

  /** The models the engines serve (each engine's {@code model}), in the order of the engines. */
  public List<String> models() {
    Set<String> models = new java.util.LinkedHashSet<>();
    engines.forEach(e -> models.add(e.model()));
    return List.copyOf(models);
  }

  public Optional<EngineConfig> engine(String iid) {
    return engines.stream().filter(e -> e.iid().equals(iid)).findFirst();
  }

  /** Every key written out, defaults included; {@link #fromJson} of the result equals this config. */
  public JsonObject toJson() {
    return FILE.toJson(this);
  }
}
