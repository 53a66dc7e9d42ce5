package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** docs/operations.md#journal lists exactly the fields of a live router's request row. */
@Timeout(60)
class JournalDocTest {
  @Test
  void everyFieldOfARequestRowIsDocumented() throws Exception {
    Set<String> live;
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"))) {
      RouterHarness.Reply reply = h.post("/v1/completions", new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "hi")
          .put("max_tokens", 2));
      assertEquals(200, reply.status(), reply.body());
      JsonObject row = h.journalRows(1).get(0);
      assertEquals(RouterHarness.MODEL, row.getString("model"), "the model placement accepted");
      live = new TreeSet<>(row.fieldNames());
    }
    Set<String> documented = new TreeSet<>();
    DocPages.rows("operations.md", "field").forEach(r -> DocPages.code(r.get("field"))
        .forEach(name -> documented.add(name.replace("[]", ""))));
    assertEquals(live, documented, "fields of a live journal row (left) vs the journal table of docs/operations.md");
  }
}
