package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.util.Objects;
import java.util.List;

/**
 * One vLLM engine of the fleet: its id, base URL, the legs it may serve, where it publishes its
 * attestation, the NIXL side channel ({@code host:port}, empty when not pinned) its KV cache
 * is reached through, and the model it serves ({@code ""}: the fleet's top-level {@code model}, filled in by
 * {@link NarwhalConfig}).
 */
public record EngineConfig(String iid, String url, Role role, String attestationUrl, String kvSideChannel, String model) {

  static final String URL_EXPECTATION = "an http:// or https:// URL with a host and an optional port";

  static final Key<EngineConfig, String> IID = Key.nonEmpty("iid", EngineConfig::iid, null);
  static final Key<EngineConfig, String> URL = Key.text("url", EngineConfig::url, null, AddressSyntax::isHttpUrl,
      URL_EXPECTATION);
  static final Key<EngineConfig, Role> ROLE = Key.choice("role", EngineConfig::role, Role.BOTH,
      List.of(Role.values()), Role::wireName);
  static final Key<EngineConfig, String> ATTESTATION_URL = Key.text("attestation_url", EngineConfig::attestationUrl, "",
      s -> s.isEmpty() || AddressSyntax.isHttpUrl(s), "\"\" or " + URL_EXPECTATION);
  static final Key<EngineConfig, String> KV_SIDE_CHANNEL = Key.text("kv_side_channel", EngineConfig::kvSideChannel, "",
      s -> s.isEmpty() || AddressSyntax.isHostPort(s, true), "\"\" or \"host:port\"");
  /** "" (absent): the fleet's top-level model. */
  static final Key<EngineConfig, String> MODEL = Key.text("model", EngineConfig::model, "", m -> !m.isBlank(),
      "a non-empty model name (absent: the top-level model)");
  static final Section<EngineConfig> SECTION = new Section<>(IID, URL, ROLE, ATTESTATION_URL, KV_SIDE_CHANNEL, MODEL);

  public EngineConfig {
    Objects.requireNonNull(iid, "iid");
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(role, "role");
    attestationUrl = attestationUrl == null ? "" : attestationUrl;
    kvSideChannel = kvSideChannel == null ? "" : kvSideChannel;
    model = model == null ? "" : model;
  }

  /** An engine of the fleet's top-level model. */
  public EngineConfig(String iid, String url, Role role, String attestationUrl, String kvSideChannel) {
    this(iid, url, role, attestationUrl, kvSideChannel, "");
  }

  /** The same engine serving {@code model}. */
  public EngineConfig withModel(String model) {
    return new EngineConfig(iid, url, role, attestationUrl, kvSideChannel, model);
  }

  static EngineConfig read(SectionReader r) {
    return new EngineConfig(r.get(IID), r.get(URL), r.get(ROLE), r.get(ATTESTATION_URL), r.get(KV_SIDE_CHANNEL),
        r.get(MODEL));
  }

  /** An engine from its {@link #toJson()} (as written in the fleet file's {@code engines}); refused naming the key. */
  public static EngineConfig fromJson(JsonObject json) {
    return read(SectionReader.of(json, "engine", SECTION));
  }

  /** The URL's host, without the brackets of an IPv6 literal. */
  public String host() {
    String host = URI.create(url).getHost();
    return host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
  }

  /** The URL's port, or 443 for https and 80 for http when the URL names none. */
  public int port() {
    URI uri = URI.create(url);
    if (uri.getPort() != -1) {
      return uri.getPort();
    }
    return "https".equals(uri.getScheme()) ? 443 : 80;
  }

  /** {@code attestation_url}, or the engine's {@code /attestation} endpoint when it is empty. */
  public String attestationUrlOrDefault() {
    if (!attestationUrl.isEmpty()) {
      return attestationUrl;
    }
    String base = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    return base + "/attestation";
  }

  public JsonObject toJson() {
    return SECTION.toJson(this);
  }
}
