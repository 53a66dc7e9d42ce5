package narwhal.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class MalformedJsonTest {

  private static ConfigException refusal(String text) {
    return assertThrows(ConfigException.class, () -> NarwhalConfig.parse(text));
  }

  @Test
  void trailingCommaNamesLineAndColumn() {
    ConfigException e = refusal("{\"model\": \"m\",\n}");
    assertEquals("malformed JSON: line 2, column 1: Unexpected character ('}' (code 125)): "
        + "was expecting double-quote to start field name", e.getMessage());
    assertEquals("", e.key());
  }

  @Test
  void truncatedFile() {
    assertEquals("malformed JSON: line 1, column 14: Unexpected end-of-input: expected close marker for Object",
        refusal("{\"model\": \"m\"").getMessage());
  }

  @Test
  void textAfterTheObject() {
    assertEquals("malformed JSON: Unexpected trailing token", refusal("{\"model\": \"m\"} {}").getMessage());
  }

  @Test
  void notAnObject() {
    assertEquals("malformed JSON: expected an object at the top level", refusal("[1]").getMessage());
  }

  @Test
  void emptyFile() {
    assertEquals("malformed JSON: the file is empty", refusal("  \n").getMessage());
  }
}
