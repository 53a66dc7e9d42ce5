package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code POST /narwhal/admin} on the health port of a real replica over real simulated engines: the token in
 * {@code Authorization: Bearer}, a missing or wrong one refused with 401 and nothing changed, bad bodies refused with
 * 400 naming the field (413 when too large), an engine command answered once the shared state shows its effect.
 */
@Timeout(90)
class AdminEndpointTest {
  private static RouterHarness h;
  private final HttpClient client = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"), json -> json
        .put("server", json.getJsonObject("server").put("health_port", 0)));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  private HttpResponse<String> post(String body, String authorization) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + h.router.healthPort() + AdminEndpoint.PATH))
        .POST(HttpRequest.BodyPublishers.ofString(body)).header("content-type", "application/json");
    if (authorization != null) request.header("authorization", authorization);
    return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String command(String name, JsonObject args) {
    return new JsonObject().put("command", name).put("args", args).encode();
  }

  private static String message(HttpResponse<String> response) {
    return new JsonObject(response.body()).getJsonObject("error").getString("message");
  }

  @Test
  void aGoodTokenEjectsAndReadmitsAMissingOrWrongOneChangesNothing() throws Exception {
    HttpResponse<String> missing = post(command("eject", new JsonObject().put("iid", "D1")), null);
    assertEquals(401, missing.statusCode(), missing.body());
    assertTrue(message(missing).contains("admin token missing"), missing.body());
    HttpResponse<String> wrong = post(command("eject", new JsonObject().put("iid", "D1")), "Bearer not-the-token");
    assertEquals(401, wrong.statusCode(), wrong.body());
    assertEquals("admin token missing or wrong", message(wrong));
    HttpResponse<String> otherScheme = post(command("eject", new JsonObject().put("iid", "D1")), "Basic " + RouterHarness.ADMIN_TOKEN);
    assertEquals(401, otherScheme.statusCode(), otherScheme.body());
    assertEquals("serving", AdminAndPlacementTest.engineState(h, "D1"), "a refused command changes nothing");

    HttpResponse<String> eject = post(command("eject", new JsonObject().put("iid", "D1")), "Bearer " + RouterHarness.ADMIN_TOKEN);
    assertEquals(200, eject.statusCode(), eject.body());
    JsonObject reply = new JsonObject(eject.body());
    assertEquals(new JsonObject().put("iid", "D1").put("asked", "ejected").put("seen", "ejected").put("done", true),
        reply.getJsonObject("effect"));
    assertTrue(!reply.containsKey("mac") && !reply.containsKey("_tag"), "the reply is plain JSON: " + reply);
    assertEquals("ejected", AdminAndPlacementTest.engineState(h, "D1"));

    HttpResponse<String> readmit = post(command("readmit", new JsonObject().put("iid", "D1")), "bearer " + RouterHarness.ADMIN_TOKEN);
    assertEquals(200, readmit.statusCode(), readmit.body());
    assertEquals("serving", new JsonObject(readmit.body()).getJsonObject("effect").getString("seen"));
    assertEquals("serving", AdminAndPlacementTest.engineState(h, "D1"));

    HttpResponse<String> state = post(command("state", new JsonObject()), null);
    assertEquals(200, state.statusCode(), "state needs no token, as on the bus");
    assertEquals(3, new JsonObject(state.body()).getJsonArray("engines").size());
    HttpResponse<String> expecting = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + h.router.healthPort()
        + AdminEndpoint.PATH)).version(HttpClient.Version.HTTP_1_1).expectContinue(true)
        .POST(HttpRequest.BodyPublishers.ofString(command("state", new JsonObject()))).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, expecting.statusCode(), "Expect: 100-continue (curl's for larger bodies) is answered");
    HttpResponse<String> stateWrongToken = post(command("state", new JsonObject()), "Bearer not-the-token");
    assertEquals(401, stateWrongToken.statusCode(), "a token given must be right, even for state");
  }

  @Test
  void badBodiesAreRefusedNamingTheField() throws Exception {
    String token = "Bearer " + RouterHarness.ADMIN_TOKEN;
    HttpResponse<String> notJson = post("eject D0", token);
    assertEquals(400, notJson.statusCode());
    assertTrue(message(notJson).startsWith("body: "), notJson.body());
    HttpResponse<String> noCommand = post(new JsonObject().put("args", new JsonObject()).encode(), token);
    assertEquals(400, noCommand.statusCode());
    assertTrue(message(noCommand).startsWith("command: missing: expected one of state, eject"), noCommand.body());
    HttpResponse<String> unknown = post(command("explode", new JsonObject()), token);
    assertEquals(400, unknown.statusCode());
    assertTrue(message(unknown).startsWith("command: explode is not a command"), unknown.body());
    HttpResponse<String> badArgs = post(new JsonObject().put("command", "eject").put("args", "D0").encode(), token);
    assertEquals(400, badArgs.statusCode());
    assertEquals("args: expected a JSON object", message(badArgs));
    HttpResponse<String> unknownEngine = post(command("eject", new JsonObject().put("iid", "X9")), token);
    assertEquals(400, unknownEngine.statusCode());
    assertEquals("eject: unknown engine X9", message(unknownEngine));
    HttpResponse<String> badSeconds = post(command("quarantine", new JsonObject().put("iid", "D0").put("seconds", "long")), token);
    assertEquals(400, badSeconds.statusCode());
    assertTrue(message(badSeconds).startsWith("quarantine: seconds: "), badSeconds.body());
    HttpResponse<String> huge = post(command("state", new JsonObject().put("pad", "x".repeat(AdminEndpoint.MAX_BODY_BYTES))), token);
    assertEquals(413, huge.statusCode());
    assertEquals("body: larger than " + AdminEndpoint.MAX_BODY_BYTES + " bytes", message(huge));
    HttpResponse<String> get = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + h.router.healthPort()
        + AdminEndpoint.PATH)).GET().build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(405, get.statusCode());
    assertEquals("serving", AdminAndPlacementTest.engineState(h, "D0"));
  }
}
