package narwhal.router;

import io.vertx.core.http.HttpMethod;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Issue 26: what vLLM answers at the HTTP edge — 405 with {@code Allow}, CORS, ids and headers — the router answers too. */
@Timeout(60)
class HttpEdgeTest {
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @Test
  void aKnownPathWithAnotherMethodIs405WithAllow() {
    for (HttpMethod method : List.of(HttpMethod.GET, HttpMethod.PUT, HttpMethod.DELETE, HttpMethod.OPTIONS)) {
      RouterHarness.Reply reply = h.request(method, "/v1/completions", null, Map.of());
      assertEquals(405, reply.status(), method + " " + reply.body());
      assertEquals("POST", reply.header("allow"));
      assertEquals("Method Not Allowed: " + method.name() + " /v1/completions (allowed: POST)", reply.error().getString("message"));
    }
    RouterHarness.Reply models = h.request(HttpMethod.POST, "/v1/models", null, Map.of());
    assertEquals(405, models.status());
    assertEquals("GET", models.header("allow"));
    RouterHarness.Reply unknown = h.request(HttpMethod.GET, "/v2/nothing", null, Map.of());
    assertEquals(404, unknown.status());
    assertNull(unknown.header("allow"));
  }
}
