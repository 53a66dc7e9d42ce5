package narwhal.sim;

import io.vertx.core.json.JsonObject;

import java.util.Set;

/**
 * One fault to inject: a {@code kind}, the leg it targets ({@code phase}: prefill, decode or
 * any), how often ({@code count}: the next N matching requests, or {@code probability} p per
 * matching request; the default is count 1), optionally the requests it targets by the model they name
 * ({@code model}: a served name or an adapter; absent: every model) and the kind's own parameters.
 *
 * <p>JSON form (options, {@code POST /sim/faults}): parameters sit beside the reserved keys, e.g.
 * {@code {"kind":"close_before_done","after":3,"phase":"decode","count":2}}. Header form
 * ({@code x-sim-fault}, or the body field {@code sim_fault}): {@code kind[;param=value]...}, e.g.
 * {@code close_before_done;after=3;phase=decode}.
 */
public final class FaultRule {

  static final Set<String> PHASES = Set.of("prefill", "decode", "any", "tokenize");
  /** The kinds a {@code tokenize}-phase rule may have: what can happen to a {@code POST /tokenize} before its answer. */
  static final Set<InjectedFault> TOKENIZE_KINDS = Set.of(InjectedFault.STATUS, InjectedFault.QUEUE_FULL, InjectedFault.RESET,
      InjectedFault.HANG_BEFORE_HEADERS);
  static final Set<String> RESERVED = Set.of("kind", "phase", "count", "probability", "model");
  static final Set<String> BAD_BLOCK_VARIANTS = Set.of("strings", "floats", "booleans", "negative", "not_list", "mixed");
  static final Set<String> FOREIGN_VARIANTS = Set.of("mooncake", "sglang", "lmcache");
  static final Set<String> STORM_MODES = Set.of("reset", "close");

  private final InjectedFault type;
  private String phase = "any";
  private Integer count;
  private Double probability;
  private String model;
  private final JsonObject params = new JsonObject();

  private FaultRule(InjectedFault type) {
    this.type = type;
  }

  /** A rule of this kind with default targeting (any phase, next request only). */
  public static FaultRule of(String kind) {
    return new FaultRule(InjectedFault.fromWire(kind));
  }

  /** Parses and validates the JSON form; throws {@link IllegalArgumentException} when invalid. */
  public FaultRule(JsonObject json) {
    Object kind = json.getValue("kind");
    if (!(kind instanceof String)) {
      throw new IllegalArgumentException("fault rule needs a string 'kind': " + json.encode());
    }
    this.type = InjectedFault.fromWire((String) kind);
    for (String key : json.fieldNames()) {
      Object value = json.getValue(key);
      switch (key) {
        case "kind":
          break;
        case "phase":
          phase(String.valueOf(value));
          break;
        case "count":
          if (value != null) {
            count(asNumber(key, value).intValue());
          }
          break;
        case "probability":
          if (value != null) {
            probability(asNumber(key, value).doubleValue());
          }
          break;
        case "model":
          if (value != null) {
            if (!(value instanceof String name) || name.isBlank()) {
              throw new IllegalArgumentException("fault model must be a non-empty model name, got " + value);
            }
            model = name;
          }
          break;
        default:
          params.put(key, value);
      }
    }
    validateParams();
  }

  /**
   * Parses the header form {@code kind[;param=value]...}; numbers become numbers,
   * {@code true}/{@code false} booleans, anything else stays a string.
   */
  public static FaultRule parse(String spec) {
    if (spec == null || spec.isBlank()) {
      throw new IllegalArgumentException("empty fault spec");
    }
    String[] parts = spec.split(";");
    JsonObject json = new JsonObject().put("kind", parts[0].trim());
    for (int i = 1; i < parts.length; i++) {
      String part = parts[i].trim();
      if (part.isEmpty()) {
        continue;
      }
      int eq = part.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("fault parameter '" + part + "' is not name=value");
      }
      json.put(part.substring(0, eq).trim(), scalar(part.substring(eq + 1).trim()));
    }
    return new FaultRule(json);
  }

  /**
   * Restricts the rule to {@code prefill}, {@code decode} or {@code any} leg, or to {@code tokenize}: vLLM's
   * {@code POST /tokenize}, which takes only rules naming that phase (an {@code any} rule stays for the legs).
   */
  public FaultRule phase(String phase) {
    if (!PHASES.contains(phase)) {
      throw new IllegalArgumentException("fault phase must be prefill, decode, any or tokenize, got '" + phase + "'");
    }
    if ("tokenize".equals(phase) && !TOKENIZE_KINDS.contains(type)) {
      throw new IllegalArgumentException(type.wire + " does not apply to /tokenize: a tokenize rule is status, queue_full, reset or "
          + "hang_before_headers");
    }
    if (type.connectionLevel() && !"any".equals(phase)) {
      throw new IllegalArgumentException(type.wire + " acts on a connection before any request is read: it takes no phase or model");
    }
    this.phase = phase;
    return this;
  }

  /** Applies to the next {@code n} matching requests. */
  public FaultRule count(int n) {
    if (n < 1) {
      throw new IllegalArgumentException("fault count must be >= 1, got " + n);
    }
    this.count = n;
    return this;
  }

  /** Applies to each matching request with probability {@code p} (unlimited unless a count is set too). */
  public FaultRule probability(double p) {
    if (!(p >= 0 && p <= 1)) {
      throw new IllegalArgumentException("fault probability must be within 0..1, got " + p);
    }
    this.probability = p;
    return this;
  }

  /** Sets a kind parameter such as {@code after}, {@code status}, {@code seconds}, {@code variant}. */
  public FaultRule param(String name, Object value) {
    if (RESERVED.contains(name)) {
      throw new IllegalArgumentException("'" + name + "' is not a parameter");
    }
    params.put(name, value);
    validateParams();
    return this;
  }

  public String kind() {
    return type.wire;
  }

  public String phase() {
    return phase;
  }

  /** Remaining applications, or null when only a probability limits it. */
  public Integer count() {
    return count == null && probability == null ? Integer.valueOf(1) : count;
  }

  public Double probability() {
    return probability;
  }

  public JsonObject params() {
    return params.copy();
  }

  public JsonObject toJson() {
    JsonObject json = new JsonObject().put("kind", type.wire).put("phase", phase);
    Integer remaining = count();
    if (remaining != null) {
      json.put("count", remaining);
    }
    if (probability != null) {
      json.put("probability", probability);
    }
    if (model != null) {
      json.put("model", model);
    }
    return json.mergeIn(params);
  }

  @Override
  public String toString() {
    return toJson().encode();
  }

  FaultRule copy() {
    return new FaultRule(toJson());
  }

  InjectedFault type() {
    return type;
  }

  boolean matchesPhase(String requestPhase) {
    if ("tokenize".equals(requestPhase) || "tokenize".equals(phase)) return phase.equals(requestPhase);
    return "any".equals(phase) || phase.equals(requestPhase);
  }

  /** Whether the rule applies to a request naming {@code requestModel}: any, unless the rule names a model. */
  boolean matchesModel(String requestModel) {
    return model == null || model.equals(requestModel);
  }

  /** Consumes one application; returns false when the rule is used up afterwards. */
  boolean consume() {
    if (count == null && probability == null) {
      count = 1;
    }
    if (count == null) {
      return true;
    }
    count = count - 1;
    return count > 0;
  }

  int intParam(String name, int def) {
    Object v = params.getValue(name);
    return v instanceof Number ? ((Number) v).intValue() : def;
  }

  double doubleParam(String name, double def) {
    Object v = params.getValue(name);
    return v instanceof Number ? ((Number) v).doubleValue() : def;
  }

  String stringParam(String name, String def) {
    Object v = params.getValue(name);
    return v == null ? def : v.toString();
  }

  boolean hasParam(String name) {
    return params.getValue(name) != null;
  }

  private void validateParams() {
    for (String numeric : new String[] {"after", "frames", "interval_ms", "seconds", "itl_ms", "keepalive_ms", "status", "code"}) {
      Object v = params.getValue(numeric);
      if (v != null && !(v instanceof Number && ((Number) v).doubleValue() >= 0)) {
        throw new IllegalArgumentException("fault parameter " + numeric + " must be a non-negative number, got " + v);
      }
    }
    if (type == InjectedFault.STATUS || type == InjectedFault.ERROR_IN_STREAM) {
      int status = intParam(type == InjectedFault.STATUS ? "status" : "code", 500);
      if (status < 100 || status > 599) {
        throw new IllegalArgumentException("fault status must be within 100..599, got " + status);
      }
    }
    if (type.connectionLevel() && (!"any".equals(phase) || model != null)) {
      throw new IllegalArgumentException(type.wire + " acts on a connection before any request is read: it takes no phase or model");
    }
    if (type == InjectedFault.REFUSE_STORM && hasParam("mode") && !STORM_MODES.contains(stringParam("mode", ""))) {
      throw new IllegalArgumentException("refuse_storm mode must be one of " + STORM_MODES);
    }
    if (type == InjectedFault.TRICKLE_HEADERS && hasParam("interval_ms") && doubleParam("interval_ms", 0) < 1) {
      throw new IllegalArgumentException("trickle_headers interval_ms must be at least 1");
    }
    if (type == InjectedFault.DESCRIPTOR_BAD_BLOCK_IDS && hasParam("variant")
      && !BAD_BLOCK_VARIANTS.contains(stringParam("variant", ""))) {
      throw new IllegalArgumentException("descriptor_bad_block_ids variant must be one of " + BAD_BLOCK_VARIANTS);
    }
    if (type == InjectedFault.DESCRIPTOR_FOREIGN_CONNECTOR && hasParam("variant")
      && !FOREIGN_VARIANTS.contains(stringParam("variant", ""))) {
      throw new IllegalArgumentException("descriptor_foreign_connector variant must be one of " + FOREIGN_VARIANTS);
    }
  }

  private static Number asNumber(String key, Object value) {
    if (!(value instanceof Number)) {
      throw new IllegalArgumentException("fault " + key + " must be a number, got " + value);
    }
    return (Number) value;
  }

  private static Object scalar(String text) {
    if (text.equals("true") || text.equals("false")) {
      return Boolean.valueOf(text);
    }
    try {
      return Integer.valueOf(text);
    } catch (NumberFormatException notInt) {
      try {
        return Double.valueOf(text);
      } catch (NumberFormatException notNumber) {
        return text;
      }
    }
  }
}
