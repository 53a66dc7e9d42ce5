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
    TelemetryConfig telemetry) {

  public static final String SCHEMA = "narwhal.fleet";
  public static final int SCHEMA_VERSION = 1;

  private static final Set<String> KEYS = Set.of("schema", "schema_version", "model", "engines",
      "engine_contract", "server", "serving", "engine", "recovery", "cluster", "admin", "journal", "metrics", "sim",
      "placement", "telemetry");
  private static final String ENGINES_EXPECTATION = "a non-empty list of engines";

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
  }

  /** Parses the text of a fleet file; text that is not a JSON object is refused as malformed. */
  public static NarwhalConfig parse(String text) {
    Object value = JsonText.decode(text);
    if (!(value instanceof JsonObject)) {
      throw ConfigException.malformed("expected an object at the top level");
    }
    return fromJson((JsonObject) value);
  }

  public static NarwhalConfig fromJson(JsonObject json) {
    Objects.requireNonNull(json, "json");
    SectionReader r = SectionReader.of(json, "", KEYS);
    r.text("schema", SCHEMA, SCHEMA::equals, "\"" + SCHEMA + "\"");
    r.wholeNumber("schema_version", SCHEMA_VERSION, SCHEMA_VERSION, SCHEMA_VERSION,
        String.valueOf(SCHEMA_VERSION));
    String model = r.nonEmptyString("model", null);
    List<EngineConfig> engines = engines(r);
    JsonObject engineContract = engineContract(r);
    ServerConfig server = ServerConfig.read(r.section("server", ServerConfig.KEYS));
    ServingConfig serving = ServingConfig.read(r.section("serving", ServingConfig.KEYS));
    EngineSettings engine = EngineSettings.read(r.section("engine", EngineSettings.KEYS));
    clientKeysAreNotTheEngineKey(server, engine);
    return new NarwhalConfig(
        model,
        engines,
        engineContract,
        server,
        serving,
        engine,
        RecoveryConfig.read(r.section("recovery", RecoveryConfig.KEYS), engineContract != null),
        ClusterConfig.read(r.section("cluster", ClusterConfig.KEYS)),
        AdminConfig.read(r.section("admin", AdminConfig.KEYS)),
        JournalConfig.read(r.section("journal", JournalConfig.KEYS)),
        MetricsConfig.read(r.section("metrics", MetricsConfig.KEYS)),
        SimConfig.read(r.section("sim", SimConfig.KEYS)),
        PlacementConfig.read(r.section("placement", PlacementConfig.KEYS)),
        TelemetryConfig.read(r.section("telemetry", TelemetryConfig.KEYS)));
  }

  /** The sections the admin command line reads (docs/operations.md#admin-commands). */
  public record AdminView(ClusterConfig cluster, AdminConfig admin) {
  }

  /** Reads and validates {@code cluster} and {@code admin} alone, whatever the rest of the file holds. */
  public static AdminView adminView(JsonObject json) {
    JsonObject cluster = json.getValue("cluster") instanceof JsonObject c ? c : new JsonObject();
    JsonObject admin = json.getValue("admin") instanceof JsonObject a ? a : new JsonObject();
    SectionReader r = SectionReader.of(new JsonObject().put("cluster", cluster).put("admin", admin), "", KEYS);
    return new AdminView(ClusterConfig.read(r.section("cluster", ClusterConfig.KEYS)),
        AdminConfig.read(r.section("admin", AdminConfig.KEYS)));
  }

  /** The engines' key must never open the router to clients: the two keys cannot come from one variable. */
  private static void clientKeysAreNotTheEngineKey(ServerConfig server, EngineSettings engine) {
    for (String env : List.of(server.apiKeyEnv(), server.opsTokenEnv())) {
      if (!env.isEmpty() && env.equals(engine.engineApiKeyEnv())) {
        String key = env.equals(server.apiKeyEnv()) ? "server.api_key_env" : "server.ops_token_env";
        throw ConfigException.invalid(key, env, "a variable other than engine.engine_api_key_env (the engines' key is "
            + "never a client key)");
      }
    }
  }

  private static List<EngineConfig> engines(SectionReader r) {
    JsonArray array = r.array("engines", ENGINES_EXPECTATION);
    if (array.isEmpty()) {
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
      EngineConfig engine = EngineConfig.read(SectionReader.of((JsonObject) entry, key, EngineConfig.KEYS));
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
    JsonArray engineArray = new JsonArray();
    engines.forEach(e -> engineArray.add(e.toJson()));
    return new JsonObject()
        .put("schema", SCHEMA)
        .put("schema_version", SCHEMA_VERSION)
        .put("model", model)
        .put("engines", engineArray)
        .put("engine_contract", engineContract())
        .put("server", server.toJson())
        .put("serving", serving.toJson())
        .put("engine", engine.toJson())
        .put("recovery", recovery.toJson())
        .put("cluster", cluster.toJson())
        .put("admin", admin.toJson())
        .put("journal", journal.toJson())
        .put("metrics", metrics.toJson())
        .put("sim", sim.toJson())
        .put("placement", placement.toJson())
        .put("telemetry", telemetry.toJson());
  }
}
