package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How {@link LocalPrefill} counts a prompt's tokens without tokenizing (docs/operations.md#local-prefill). */
class LocalPrefillCountTest {
  private static JsonObject completion(Object prompt) {
    return new JsonObject().put("prompt", prompt);
  }

  private static JsonObject chat(JsonArray messages) {
    return new JsonObject().put("messages", messages);
  }

  @Test
  void textCountsItsUtf8BytesAndIdsCountExactly() {
    assertTrue(LocalPrefill.eligible(completion("abcd"), false, 4));
    assertFalse(LocalPrefill.eligible(completion("abcde"), false, 4));
    assertFalse(LocalPrefill.eligible(completion("ééé"), false, 5), "two bytes each");
    assertTrue(LocalPrefill.eligible(completion("ééé"), false, 6));
    assertTrue(LocalPrefill.eligible(completion("\uD83D\uDC0B"), false, 4), "a whale is four bytes");
    assertFalse(LocalPrefill.eligible(completion("\uD83D\uDC0B"), false, 3));
    assertTrue(LocalPrefill.eligible(completion(new JsonArray().add("abcd")), false, 4), "a batch of one");
    assertTrue(LocalPrefill.eligible(completion(new JsonArray().add(1).add(2).add(3)), false, 3));
    assertFalse(LocalPrefill.eligible(completion(new JsonArray().add(1).add(2).add(3)), false, 2));
    assertFalse(LocalPrefill.eligible(completion("ab"), false, 0), "0 is off");
    assertFalse(LocalPrefill.eligible(completion("ab").put("prompt_logprobs", 1), false, 64), "a prefill computes them");
    assertFalse(LocalPrefill.eligible(completion("x".repeat(1_000_000)), false, 64));
  }

  @Test
  void chatCountsRolesTextAndTemplateMarkersAndRefusesNonTextParts() {
    JsonArray one = new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"));
    int counted = "user".length() + "hi".length() + LocalPrefill.CHAT_MESSAGE_TOKENS;
    assertTrue(LocalPrefill.eligible(chat(one), true, counted));
    assertFalse(LocalPrefill.eligible(chat(one), true, counted - 1));
    JsonArray parts = new JsonArray().add(new JsonObject().put("role", "user").put("content",
        new JsonArray().add(new JsonObject().put("type", "text").put("text", "hi"))));
    assertTrue(LocalPrefill.eligible(chat(parts), true, counted));
    JsonArray image = new JsonArray().add(new JsonObject().put("role", "user").put("content", new JsonArray()
        .add(new JsonObject().put("type", "image_url").put("image_url", new JsonObject().put("url", "data:x")))));
    assertFalse(LocalPrefill.eligible(chat(image), true, 1_000_000), "an image's tokens are not known");
    JsonObject withTools = chat(one).put("tools", new JsonArray().add(new JsonObject().put("type", "function")));
    assertFalse(LocalPrefill.eligible(withTools, true, counted), "tools count their JSON size");
  }
}
