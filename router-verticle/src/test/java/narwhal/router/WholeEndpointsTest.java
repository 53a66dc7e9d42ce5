package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code /v1/embeddings}, {@code /tokenize}, {@code /detokenize} and {@code /v1/responses} through the router on a real
 * simulated P/D fleet (docs/operations.md#several-models): each runs whole on one decode-capable engine of its model and
 * answers what that engine answers itself; a response's follow-up by {@code previous_response_id} goes to the engine
 * that holds it, and gets vLLM's own 404 when that engine is gone.
 */
@Timeout(120)
class WholeEndpointsTest {
  private static final Pattern DATA = Pattern.compile("^data: (.*)$", Pattern.MULTILINE);
  private static RouterHarness h;

  @BeforeAll
  static void fleet() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"),
        json -> json.put("serving", new JsonObject().put("max_attempts", 2)));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @BeforeEach
  void clean() {
    h.resetEngines();
  }

  @Test
  void embeddingsTokenizeAndDetokenizeEqualTheEnginesOwnAnswers() {
    JsonObject embed = new JsonObject().put("model", RouterHarness.MODEL).put("input", new JsonArray().add("the narwhal").add("ice"));
    RouterHarness.Reply routed = h.post("/v1/embeddings", embed);
    assertEquals(200, routed.status(), routed.body());
    JsonObject direct = direct(engineOf("/v1/embeddings"), "/v1/embeddings", embed);
    assertEquals(direct.getJsonArray("data"), routed.json().getJsonArray("data"));
    assertEquals(direct.getJsonObject("usage"), routed.json().getJsonObject("usage"));
    assertEquals("list", routed.json().getString("object"));

    JsonObject tokenize = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "the narwhal swims");
    RouterHarness.Reply tokens = h.post("/tokenize", tokenize);
    assertEquals(200, tokens.status(), tokens.body());
    assertEquals(direct("D0", "/tokenize", tokenize), tokens.json(), "every engine of the model tokenizes alike");
    JsonObject detokenize = new JsonObject().put("model", RouterHarness.MODEL).put("tokens", tokens.json().getJsonArray("tokens"));
    RouterHarness.Reply text = h.post("/detokenize", detokenize);
    assertEquals(200, text.status(), text.body());
    assertEquals(direct(engineOf("/detokenize"), "/detokenize", detokenize), text.json());
    assertTrue(h.engine("P0").requests().stream().noneMatch(r -> "whole".equals(r.getString("phase"))),
        "a prefill engine runs nothing whole");
  }

  @Test
  void aResponseAndItsFollowUpThroughPreviousResponseIdEqualTheEnginesOwn() throws Exception {
    JsonObject first = new JsonObject().put("model", RouterHarness.MODEL).put("input", "Where do narwhals live?")
        .put("max_output_tokens", 8);
    RouterHarness.Reply answer = h.post("/v1/responses", first);
    assertEquals(200, answer.status(), answer.body());
    String id = answer.json().getString("id");
    assertTrue(id.startsWith("resp_"), id);
    String owner = engineOf("/v1/responses");
    assertEquals(text(direct(owner, "/v1/responses", first)), text(answer.json()), "the engine's own output");
    JsonObject row = h.journalRow(answer.requestId());
    assertEquals(owner, row.getString("decode_iid"));
    assertEquals("/v1/responses", row.getString("endpoint"));
    assertEquals(RouterHarness.MODEL, row.getString("model"));

    for (int i = 0; i < 4; i++) {
      h.resetEngines();
      JsonObject next = new JsonObject().put("model", RouterHarness.MODEL).put("input", "And what do they eat?")
          .put("previous_response_id", id).put("max_output_tokens", 8);
      RouterHarness.Reply followUp = h.post("/v1/responses", next);
      assertEquals(200, followUp.status(), followUp.body());
      assertEquals(owner, engineOf("/v1/responses"), "the follow-up runs where its previous response lives");
      assertEquals(id, followUp.json().getString("previous_response_id"));
      assertEquals(text(direct(owner, "/v1/responses", next)), text(followUp.json()));
    }
  }

  @Test
  void aFollowUpSentTheMomentItsAnswerEndsFindsItsEngine() {
    for (int i = 0; i < 60; i++) {
      boolean stream = i % 2 == 1;
      RouterHarness.Reply answer = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
          .put("input", "quick " + i).put("max_output_tokens", 2));
      assertEquals(200, answer.status(), answer.body());
      RouterHarness.Reply followUp = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
          .put("input", "and?").put("previous_response_id", answer.json().getString("id")).put("max_output_tokens", 2)
          .put("stream", stream));
      assertEquals(200, followUp.status(), "follow-up " + i + " was sent as soon as its answer ended: " + followUp.body());
    }
  }

  @Test
  void aStreamedResponseIsRelayedAsTheEngineSendsItAndCanBeContinued() throws Exception {
    JsonObject first = new JsonObject().put("model", RouterHarness.MODEL).put("input", "Tell me of the arctic")
        .put("max_output_tokens", 6).put("stream", true);
    RouterHarness.Reply streamed = h.post("/v1/responses", first);
    assertEquals(200, streamed.status(), streamed.body());
    assertTrue(streamed.contentType().startsWith("text/event-stream"), streamed.contentType());
    List<JsonObject> events = events(streamed.body());
    assertEquals("response.created", events.get(0).getString("type"));
    assertEquals("response.completed", events.get(events.size() - 1).getString("type"));
    String owner = engineOf("/v1/responses");
    List<JsonObject> own = events(directText(owner, "/v1/responses", first));
    assertEquals(types(own), types(events), "the engine's own event sequence");
    assertEquals(deltas(own), deltas(events));
    String id = events.get(0).getJsonObject("response").getString("id");

    h.resetEngines();
    RouterHarness.Reply followUp = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "More").put("previous_response_id", id).put("stream", true));
    assertEquals(200, followUp.status(), followUp.body());
    assertEquals(owner, engineOf("/v1/responses"));
  }

  @Test
  void aFollowUpWhoseEngineIsGoneOrUnknownGetsVllmsNotFound() throws Exception {
    RouterHarness.Reply unknown = h.post("/v1/responses", new JsonObject().put("input", "hi").put("previous_response_id", "resp_nope"));
    assertEquals(404, unknown.status(), unknown.body());
    assertEquals("Response with id 'resp_nope' not found.", unknown.error().getString("message"));
    assertEquals("invalid_request_error", unknown.error().getString("type"));
    assertEquals("response_id", unknown.error().getString("param"));

    RouterHarness.Reply answer = h.post("/v1/responses", new JsonObject().put("input", "hello"));
    assertEquals(200, answer.status(), answer.body());
    String id = answer.json().getString("id");
    String owner = engineOf("/v1/responses");
    String other = owner.equals("D0") ? "D1" : "D0";
    h.admin("eject", new JsonObject().put("iid", owner));
    h.placementSettled();
    try {
      RouterHarness.Reply gone = h.post("/v1/responses", new JsonObject().put("input", "again").put("previous_response_id", id));
      assertEquals(404, gone.status(), gone.body());
      assertEquals("Response with id '" + id + "' not found.", gone.error().getString("message"));
      assertTrue(h.engine(other).requests().stream().noneMatch(r -> "/v1/responses".equals(r.getString("path"))));
    } finally {
      h.admin("readmit", new JsonObject().put("iid", owner));
    }
  }

  /** An engine's own 4xx reaches the client as is; the row names the type the client got, as a completion's does. */
  @Test
  void anEnginesOwnRefusalIsJournaledWithTheTypeTheClientGot() throws Exception {
    for (String iid : List.of("D0", "D1")) {
      h.engine(iid).faults().add(new JsonObject().put("kind", "status").put("status", 400).put("type", "BadRequestError")
          .put("phase", "decode").put("count", 1));
    }
    RouterHarness.Reply reply = h.post("/v1/embeddings", new JsonObject().put("input", "refuse me"));
    assertEquals(400, reply.status(), reply.body());
    assertEquals("BadRequestError", reply.json().getJsonObject("error").getString("type"), reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals("invalid", row.getString("terminal"), row.encode());
    assertEquals("engine_rejected", row.getString("reason"), row.encode());
    assertEquals("BadRequestError", row.getString("error_type"), row.encode());
  }

  @Test
  void aStoredResponseIsReadAndCancelledOnTheEngineThatAnsweredIt() throws Exception {
    RouterHarness.Reply answer = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL).put("input", "keep me")
        .put("max_output_tokens", 4));
    assertEquals(200, answer.status(), answer.body());
    String id = answer.json().getString("id");
    String owner = engineOf("/v1/responses");
    for (int i = 0; i < 3; i++) {
      RouterHarness.Reply read = h.get("/v1/responses/" + id);
      assertEquals(200, read.status(), read.body());
      assertEquals(answer.json(), read.json(), "the stored response, as the engine answered it");
    }
    assertEquals(3, h.engine(owner).requests().stream().filter(r -> ("/v1/responses/" + id).equals(r.getString("path"))).count(),
        "every read went to the engine that answered it");
    JsonObject row = h.journalRow(h.get("/v1/responses/" + id).requestId());
    assertEquals("completed", row.getString("terminal"), row.encode());
    assertEquals(owner, row.getString("decode_iid"), row.encode());
    assertEquals("/v1/responses/" + id, row.getString("endpoint"), row.encode());

    RouterHarness.Reply cancel = h.request(io.vertx.core.http.HttpMethod.POST, "/v1/responses/" + id + "/cancel", null, java.util.Map.of());
    assertEquals(400, cancel.status(), "vLLM cancels only a background response: " + cancel.body());
    assertEquals("Cannot cancel a synchronous response.", cancel.error().getString("message"));
    assertTrue(h.engine(owner).requests().stream().anyMatch(r -> ("/v1/responses/" + id + "/cancel").equals(r.getString("path"))));

    for (String path : List.of("/v1/responses/resp_unknown", "/v1/responses/resp_unknown/cancel")) {
      RouterHarness.Reply unknown = path.endsWith("/cancel")
          ? h.request(io.vertx.core.http.HttpMethod.POST, path, null, java.util.Map.of()) : h.get(path);
      assertEquals(404, unknown.status(), unknown.body());
      assertEquals("Response with id 'resp_unknown' not found.", unknown.error().getString("message"));
    }

    h.admin("eject", new JsonObject().put("iid", owner));
    h.placementSettled();
    try {
      RouterHarness.Reply gone = h.get("/v1/responses/" + id);
      assertEquals(404, gone.status(), "its engine is out of service: " + gone.body());
      assertEquals("Response with id '" + id + "' not found.", gone.error().getString("message"));
    } finally {
      h.admin("readmit", new JsonObject().put("iid", owner));
    }
  }

  @Test
  void aTransientEngineFaultBeforeTheFirstByteIsRetriedOnAnotherEngineAndCounted() throws Exception {
    for (String iid : List.of("D0", "D1")) {
      h.engine(iid).faults().add(new JsonObject().put("kind", "status").put("status", 503).put("phase", "decode").put("count", 1));
    }
    RouterHarness.Reply reply = h.post("/v1/embeddings", new JsonObject().put("input", "retry me"));
    assertEquals(502, reply.status(), "both engines failed once, the second attempt too: " + reply.body());
    JsonObject row = h.journalRow(reply.requestId());
    assertEquals(2, row.getInteger("attempts"), row.encode());
    assertEquals("allowed", row.getJsonArray("attempt_failures").getJsonObject(0).getString("retry_reason"));
    RouterHarness.Reply served = h.post("/v1/embeddings", new JsonObject().put("input", "x"));
    assertEquals(200, served.status(), "the faults are spent: " + served.body());
    assertTrue(h.get("/metrics").body().contains("narwhal_attempt_failures_total{phase=\"decode\",reason=\"engine_overloaded\"}"));
  }

  @Test
  void anEnginesOwnRefusalReachesTheClientAsIs() {
    RouterHarness.Reply reply = h.post("/detokenize", new JsonObject().put("tokens", "not a list"));
    assertEquals(400, reply.status(), reply.body());
    assertEquals("tokens: Input should be a valid list of integers", reply.error().getString("message"));
    RouterHarness.Reply model = h.post("/v1/embeddings", new JsonObject().put("model", "made/up").put("input", "x"));
    assertEquals(404, model.status(), model.body());
    assertEquals("The model `made/up` does not exist.", model.error().getString("message"));
  }

  /** The engine that ran the one request logged on {@code path} since the last reset. */
  private static String engineOf(String path) {
    List<String> seen = new ArrayList<>();
    h.engines.forEach((iid, e) -> e.requests().stream().filter(r -> path.equals(r.getString("path"))).forEach(r -> seen.add(iid)));
    assertEquals(1, seen.size(), path + " ran on " + seen);
    return seen.get(0);
  }

  private static JsonObject direct(String iid, String path, JsonObject body) {
    return new JsonObject(directText(iid, path, body));
  }

  private static String directText(String iid, String path, JsonObject body) {
    RouterHarness.Reply reply = h.direct(h.engine(iid), path, body);
    assertEquals(200, reply.status(), reply.body());
    return reply.body();
  }

  private static String text(JsonObject response) {
    return response.getJsonArray("output").getJsonObject(0).getJsonArray("content").getJsonObject(0).getString("text");
  }

  private static List<JsonObject> events(String body) {
    List<JsonObject> events = new ArrayList<>();
    Matcher m = DATA.matcher(body);
    while (m.find()) events.add(new JsonObject(m.group(1)));
    return events;
  }

  private static List<String> types(List<JsonObject> events) {
    return events.stream().map(e -> e.getString("type")).toList();
  }

  private static String deltas(List<JsonObject> events) {
    StringBuilder out = new StringBuilder();
    events.stream().filter(e -> "response.output_text.delta".equals(e.getString("type"))).forEach(e -> out.append(e.getString("delta")));
    return out.toString();
  }
}
