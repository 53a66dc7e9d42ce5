package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A replica that is not clustered remembers which engine answered each {@code /v1/responses} id in its bounded record
 * alone (docs/operations.md#endpoints-an-engine-runs-whole): nothing goes to Vert.x's local shared map, where each id
 * would stay 24 hours with a timer of its own, and a follow-up still finds its engine.
 */
class ResponseOwnersBoundTest {
  private static RouterHarness h;

  @BeforeAll
  static void fleet() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode", "D1:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @Test
  void aSingleReplicaKeepsNoUnboundedCopyOfItsResponseOwnersAndFollowUpsStillFindTheirEngine() throws Exception {
    RouterHarness.Reply first = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
        .put("input", "Where do narwhals live?").put("max_output_tokens", 4));
    assertEquals(200, first.status(), first.body());
    String id = first.json().getString("id");
    String owner = h.journalRow(first.requestId()).getString("decode_iid");
    for (int i = 0; i < 3; i++) {
      RouterHarness.Reply followUp = h.post("/v1/responses", new JsonObject().put("model", RouterHarness.MODEL)
          .put("input", "And what do they eat?").put("max_output_tokens", 4).put("previous_response_id", id));
      assertEquals(200, followUp.status(), followUp.body());
      assertEquals(owner, h.journalRow(followUp.requestId()).getString("decode_iid"), "the follow-up goes to its engine");
    }
    int shared = RouterHarness.await(h.vertx.sharedData().<String, String>getAsyncMap(ResponseOwners.MAP)
        .compose(io.vertx.core.shareddata.AsyncMap::size));
    assertEquals(0, shared, "no response id in the local shared map, where it would stay 24 hours");
  }
}
