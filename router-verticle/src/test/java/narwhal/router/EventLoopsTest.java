package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static narwhal.router.FailureChecks.rowFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A replica serving from several event loops ({@code server.event_loops}) is still one router: one in-flight limit,
 * one journal with one whole row per request, one set of metrics. Concurrent connections are spread over the loops.
 */
@Timeout(90)
class EventLoopsTest {

  @Test
  void theInFlightLimitCountsEveryLoop() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"), json -> json
        .put("server", json.getJsonObject("server").put("event_loops", 2))
        .put("serving", new JsonObject().put("max_connections", 1))
        .put("engine", json.getJsonObject("engine").put("decode_read_timeout_s", 60)))) {
      h.engine("D0").faults().add(new JsonObject().put("kind", "silence_after").put("after", 1).put("phase", "decode").put("count", 1));
      Promise<String> streaming = Promise.promise();
      Promise<HttpClientRequest> held = Promise.promise();
      FailureChecks.onContext(h, () -> h.http.request(HttpMethod.POST, h.router.actualPort(), "127.0.0.1", "/v1/completions")
          .compose(req -> req.putHeader("content-type", "application/json")
              .send(DisaggregatedExecutionTest.completion(true).toBuffer()).onSuccess(resp -> {
                held.complete(req);
                Buffer seen = Buffer.buffer();
                resp.handler(chunk -> {
                  seen.appendBuffer(chunk);
                  if (seen.toString().contains("data: {")) streaming.tryComplete(resp.getHeader("x-request-id"));
                });
              }))
          .onFailure(streaming::tryFail));
      String rid = RouterHarness.await(streaming.future());

      RouterHarness.Reply refused = h.post("/v1/completions", DisaggregatedExecutionTest.completion(false));
      assertEquals(429, refused.status(), "one request in flight on the other loop fills the limit of 1: " + refused.body());
      assertEquals("in_flight_limit", rowFor(h, refused.requestId()).getString("reason"));

      RouterHarness.await(held.future()).reset();
      assertEquals("cancelled", rowFor(h, rid).getString("terminal"));
      assertEquals(200, h.post("/v1/completions", DisaggregatedExecutionTest.completion(false)).status(),
          "the ended request gave its place back");
    }
  }

  @Test
  void concurrentRequestsOnEveryLoopGetOneWholeJournalRowEachAndAreCountedOnce() throws Exception {
    int n = 40;
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "P1:prefill", "D0:decode", "D1:decode"), json -> json
        .put("server", json.getJsonObject("server").put("event_loops", 3)))) {
      List<Future<RouterHarness.Reply>> replies = new ArrayList<>();
      for (int i = 0; i < n; i++) replies.add(h.postAsync("/v1/completions", DisaggregatedExecutionTest.completion(i % 2 == 0)));
      Set<String> rids = new java.util.HashSet<>();
      for (Future<RouterHarness.Reply> reply : replies) {
        RouterHarness.Reply r = RouterHarness.await(reply);
        assertEquals(200, r.status(), r.body());
        rids.add(r.requestId());
      }
      assertEquals(n, rids.size(), "every request has its own id");

      List<JsonObject> rows = h.journalRows(n);
      List<String> lines = Files.readAllLines(h.journal).stream().filter(l -> !l.isBlank()).toList();
      List<JsonObject> parsed = lines.stream().map(JsonObject::new).toList();
      assertEquals(n, parsed.stream().filter(row -> row.containsKey("rid")).count(),
          "one whole line per request:\n" + String.join("\n", lines));
      assertEquals(rids, rows.stream().map(r -> r.getString("rid")).collect(Collectors.toSet()), "one row for each request");
      assertEquals(List.of(), rows.stream().filter(r -> !"completed".equals(r.getString("terminal"))).toList(), "all completed");

      String metrics = h.get("/metrics").body();
      assertTrue(metrics.contains("\nnarwhal_offered_total " + n + ".0"), "counted once across loops:\n" + metrics);
      assertTrue(metrics.contains("\nnarwhal_served_total " + n + ".0"), "counted once across loops:\n" + metrics);
    }
  }
}
