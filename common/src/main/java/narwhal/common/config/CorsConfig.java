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

  /** Every origin, method or header. */
  public static final List<String> ANY = List.of("*");
  private static final String ORIGINS = "a JSON array of \"*\" or origins like \"https://app.example.com\" (scheme://host[:port])";
  private static final String METHODS = "a JSON array of \"*\" or HTTP methods like \"GET\", \"POST\"";
  private static final String HEADERS = "a JSON array of \"*\" or header names like \"authorization\"";
  private static final Set<String> KNOWN_METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");

  static final Key<CorsConfig, List<String>> ALLOWED_ORIGINS = Key.strings("allowed_origins",
      CorsConfig::allowedOrigins, ANY, (r, n, d) -> list(r, n, d,
          s -> s.equals("*") || s.matches("[a-zA-Z][a-zA-Z0-9+.-]*://[^/\\s]+"), ORIGINS)).readAtStart();
  static final Key<CorsConfig, List<String>> ALLOWED_METHODS = Key.strings("allowed_methods",
      CorsConfig::allowedMethods, ANY, (r, n, d) -> list(r, n, d,
          s -> s.equals("*") || KNOWN_METHODS.contains(s.toUpperCase(Locale.ROOT)), METHODS)).readAtStart();
  static final Key<CorsConfig, List<String>> ALLOWED_HEADERS = Key.strings("allowed_headers",
      CorsConfig::allowedHeaders, ANY, (r, n, d) -> list(r, n, d,
          s -> s.equals("*") || s.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]+"), HEADERS)).readAtStart();
  static final Key<CorsConfig, Boolean> ALLOW_CREDENTIALS = Key.bool("allow_credentials",
      CorsConfig::allowCredentials, false).readAtStart();

  static final Section<CorsConfig> SECTION = new Section<>(ALLOWED_ORIGINS, ALLOWED_METHODS, ALLOWED_HEADERS,
      ALLOW_CREDENTIALS);

  public static CorsConfig defaults() {
    return read(SectionReader.empty("server.cors", SECTION));
  }

  static CorsConfig read(SectionReader r) {
    return new CorsConfig(r.get(ALLOWED_ORIGINS), r.get(ALLOWED_METHODS), r.get(ALLOWED_HEADERS),
        r.get(ALLOW_CREDENTIALS));
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
    return SECTION.toJson(this);
  }
}
