package narwhal.engines.json;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class StreamingJsonTest {
  private static final String DOCUMENT = "{\"id\":\"x\",\"choices\":[{\"text\":\"a\",\"n\":[1,2.5,null]}],"
      + "\"kv_transfer_params\":{\"remote_engine_id\":\"e\",\"remote_block_ids\":[[1,2],[3]],\"remote_port\":5600,"
      + "\"big\":12345678901,\"huge\":123456789012345678901234567890,\"f\":1.5e3,\"t\":true,\"no\":false,\"z\":null,"
      + "\"nested\":{\"a\":[{\"b\":\"\\u00e9\"}]}}, /* note */ \"usage\":null}";

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aFieldReadsAsVertxDecodesIt() throws IOException {
    Object expected = new JsonObject(DOCUMENT).getValue("kv_transfer_params");
    Object read = StreamingJson.field(bytes(DOCUMENT), "kv_transfer_params");
    assertEquals(expected, read);
    JsonObject descriptor = (JsonObject) read;
    assertEquals(Integer.class, descriptor.getJsonArray("remote_block_ids").getJsonArray(0).getValue(0).getClass());
    assertEquals(Long.class, descriptor.getValue("big").getClass());
    assertEquals(new JsonObject(DOCUMENT).getJsonObject("kv_transfer_params").getValue("huge").getClass(),
        descriptor.getValue("huge").getClass());
    assertEquals("\u00e9", descriptor.getJsonObject("nested").getJsonArray("a").getJsonObject(0).getString("b"));
  }

  @Test
  void absentAndNullFieldsAreNullAndARepeatedKeyKeepsItsLastValue() throws IOException {
    assertNull(StreamingJson.field(bytes(DOCUMENT), "missing"));
    assertNull(StreamingJson.field(bytes(DOCUMENT), "usage"));
    assertEquals("b", StreamingJson.field(bytes("{\"k\":\"a\",\"k\":\"b\"}"), "k"));
    assertEquals(7, StreamingJson.field(bytes("{\"k\":{\"x\":1},\"k\":7}"), "k"));
  }

  @Test
  void anythingButOneObjectIsRefused() {
    for (String text : List.of("", "null", "[]", "\"s\"", "{} {}", "{\"a\":1", "{\"a\":1}x", "{'a':1}")) {
      assertThrows(IOException.class, () -> StreamingJson.field(bytes(text), "a"), text);
    }
  }
}
