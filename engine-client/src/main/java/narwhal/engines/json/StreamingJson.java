package narwhal.engines.json;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Jackson's streaming parser configured as Vert.x's JSON decoding is (comments allowed), for reading engine
 * answers without a tree: callers walk the tokens, skip what they do not need and build a tree only for the
 * values they keep ({@link #readValue}), which then equal what {@code new JsonObject(text)} would hold.
 */
public final class StreamingJson {
  private static final JsonFactory JSON = JsonFactory.builder().enable(JsonReadFeature.ALLOW_JAVA_COMMENTS).build();

  private StreamingJson() {
  }

  public static JsonParser parser(byte[] bytes, int offset, int length) throws IOException {
    return JSON.createParser(bytes, offset, length);
  }

  /**
   * The value of one top-level field of a document that must be one JSON object, the rest skipped: as
   * {@code new JsonObject(text).getValue(name)} (the last value of a repeated key; null when absent).
   *
   * @throws IOException when the document is not one well-formed JSON object
   */
  public static Object field(byte[] document, String name) throws IOException {
    Object value = null;
    try (JsonParser parser = parser(document, 0, document.length)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) throw new IOException("not a JSON object");
      String field;
      while ((field = parser.nextFieldName()) != null) {
        parser.nextToken();
        if (name.equals(field)) {
          value = readValue(parser);
        } else {
          parser.skipChildren();
        }
      }
      if (parser.nextToken() != null) throw new IOException("trailing content after the JSON object");
    }
    return value;
  }

  /**
   * Reads the value at the parser's current token, consuming it: a {@link JsonObject}, {@link JsonArray},
   * String, Number (Integer, Long or BigInteger for integers, Double otherwise), Boolean or null.
   */
  public static Object readValue(JsonParser parser) throws IOException {
    Object value = raw(parser);
    if (value instanceof Map<?, ?> map) return new JsonObject(cast(map));
    if (value instanceof List<?> list) return new JsonArray(list);
    return value;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> cast(Map<?, ?> map) {
    return (Map<String, Object>) map;
  }

  /** As Vert.x's decoder: nested objects and arrays stay maps and lists, which JsonObject wraps on access. */
  private static Object raw(JsonParser parser) throws IOException {
    JsonToken token = parser.currentToken();
    if (token == null) throw new IOException("no JSON value");
    return switch (token) {
      case START_OBJECT -> {
        Map<String, Object> map = new LinkedHashMap<>();
        String name;
        while ((name = parser.nextFieldName()) != null) {
          parser.nextToken();
          map.put(name, raw(parser));
        }
        yield map;
      }
      case START_ARRAY -> {
        List<Object> list = new ArrayList<>();
        while (parser.nextToken() != JsonToken.END_ARRAY) list.add(raw(parser));
        yield list;
      }
      case VALUE_STRING -> parser.getText();
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> parser.getNumberValue();
      case VALUE_TRUE -> Boolean.TRUE;
      case VALUE_FALSE -> Boolean.FALSE;
      case VALUE_NULL -> null;
      default -> throw new IOException("unexpected token " + token);
    };
  }
}
