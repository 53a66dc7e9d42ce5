package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.ConnectException;
import java.util.List;
import java.util.NoSuchElementException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

@ExtendWith(VertxExtension.class)
class SimFleetTest {

  @Test
  void fleetStartsNamedEnginesWithTheirRolesAndClosesThemAll(Vertx vertx) throws Exception {
    List<String> roles = List.of("prefill", "prefill", "decode", "decode");
    List<SimEngineOptions> options = new java.util.ArrayList<>();
    for (int k = 0; k < roles.size(); k++) options.add(new SimEngineOptions().setName(roles.get(k) + "-" + k).setRole(roles.get(k)));
    SimFleet fleet = SimFleet.start(vertx, options).await();
    SimClient http = new SimClient(vertx);
    assertEquals(4, fleet.engines().size());
    assertEquals("kv_producer", http.get(fleet.engine("prefill-0"), "/attestation").json()
      .getJsonObject("kv_transfer_config").getString("kv_role"));
    assertEquals("kv_consumer", http.get(fleet.engine("decode-3"), "/attestation").json()
      .getJsonObject("kv_transfer_config").getString("kv_role"));
    assertNotEquals(fleet.engine("prefill-0").engineId(), fleet.engine("prefill-1").engineId());
    assertThrows(NoSuchElementException.class, () -> fleet.engine("nobody"));
    assertEquals(4, fleet.describe().size());

    JsonObject client = SimClient.completion("a disaggregated request across the fleet").put("max_tokens", 20);
    JsonObject descriptor = http.post(fleet.engine("prefill-1"), "/v1/completions", SimClient.prefillLeg(client)).json()
      .getJsonObject("kv_transfer_params");
    SimClient.Reply decode = http.post(fleet.engine("decode-2"), "/v1/completions", SimClient.decodeLeg(client, descriptor));
    assertEquals("transferred", decode.header("x-sim-kv"));
    assertEquals(Generator.generate("a disaggregated request across the fleet", 0, 1.0, 20, false).text(),
      decode.json().getJsonArray("choices").getJsonObject(0).getString("text"));

    SimEngine any = fleet.engine("decode-3");
    fleet.close().await();
    assertInstanceOf(ConnectException.class, http.get(any, "/health").failure);
  }

  @Test
  void aFleetThatCannotStartFailsAndReleasesWhatStarted(Vertx vertx) {
    SimEngine squatter = SimEngine.start(vertx, new SimEngineOptions()).await();
    List<SimEngineOptions> options = List.of(new SimEngineOptions().setName("ok"),
      new SimEngineOptions().setName("clash").setPort(squatter.port()));
    assertThrows(Exception.class, () -> SimFleet.start(vertx, options).await());
  }
}
