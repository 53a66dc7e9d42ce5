package narwhal.common.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Cross-origin access to the router's HTTP API, as {@code vllm serve} allows it ({@code --allowed-origins},
 * {@code --allowed-methods}, {@code --allowed-headers}, {@code --allow-credentials}): by default every origin, method and
 * header, without credentials, so browser apps that call vLLM directly work through the router. Read at start.
 */
public record CorsConfig(List<String> allowedOrigins, List<String> allowedMethods, List<String> allowedHeaders,
                         boolean allowCredentials) {

  static final Set<String> KEYS = Set.of("allowed_origins", "allowed_methods", "allowed_headers", "allow_credentials");
  private static final String ORIGINS = "a JSON array of \"*\" or origins like \"https://app.example.com\" (scheme://host[:port])";
  private static final String METHODS = "a JSON array of \"*\" or HTTP methods like \"GET\", \"POST\"";
  private static final String HEADERS = "a JSON array of \"*\" or header names like \"authorization\"";
  private static final Set<String> KNOWN_METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");

  public static CorsConfig defaults() {
    return new CorsConfig(List.of("*"), List.of("*"), List.of("*"), false);
  }

  static CorsConfig read(SectionReader r) {
    CorsConfig d = defaults();
    return new CorsConfig(
        list(r, "allowed_origins", d.allowedOrigins(), s -> s.equals("*") || s.matches("[a-zA-Z][a-zA-Z0-9+.-]*://[^/\\s]+"), ORIGINS),
        list(r, "allowed_methods", d.allowedMethods(), s -> s.equals("*") || KNOWN_METHODS.contains(s.toUpperCase(Locale.ROOT)), METHODS),
        list(r, "allowed_headers", d.allowedHeaders(), s -> s.equals("*") || s.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]+"), HEADERS),
        r.bool("allow_credentials", d.allowCredentials()));
  }

  private static List<String> list(SectionReader r, String name, List<String> defaultValue, Predicate<String> valid,
                                   String expectation) {
    if (!r.has(name)) return defaultValue;
    JsonArray items = r.array(name, expectation);
    List<String> out = new ArrayList<>();
    for (Object item : items) {
      if (!(item instanceof String s) || !valid.test(s)) throw r.invalid(name, expectation);
      out.add(s);
    }
    if (out.size() > 1 && out.contains("*")) throw r.invalid(name, expectation + "; \"*\" stands alone");
    return List.copyOf(out);
  }

  /** Whether every origin may call. */
  public boolean anyOrigin() {
    return allowedOrigins.contains("*");
  }

  public JsonObject toJson() {
    return new JsonObject().put("allowed_origins", new JsonArray(allowedOrigins)).put("allowed_methods", new JsonArray(allowedMethods))
        .put("allowed_headers", new JsonArray(allowedHeaders)).put("allow_credentials", allowCredentials);
  }
}
