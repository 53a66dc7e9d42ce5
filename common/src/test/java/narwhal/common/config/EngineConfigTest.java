package narwhal.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class EngineConfigTest {

  private static EngineConfig engine(String url) {
    return new EngineConfig("E0", url, Role.BOTH, "", "");
  }

  @Test
  void hostAndPortComeFromTheUrl() {
    EngineConfig e = engine("http://10.1.2.3:8101");
    assertEquals("10.1.2.3", e.host());
    assertEquals(8101, e.port());
  }

  @Test
  void portDefaultsBySchemeWhenTheUrlNamesNone() {
    assertEquals(80, engine("http://engine.local").port());
    assertEquals(443, engine("https://engine.local/").port());
    assertEquals("engine.local", engine("https://engine.local/").host());
  }

  @Test
  void ipv6HostHasNoBrackets() {
    EngineConfig e = engine("http://[::1]:8101");
    assertEquals("::1", e.host());
    assertEquals(8101, e.port());
  }

  @Test
  void attestationUrlDefaultsToTheEnginesEndpoint() {
    assertEquals("http://h:8101/attestation", engine("http://h:8101").attestationUrlOrDefault());
    assertEquals("http://h:8101/attestation", engine("http://h:8101/").attestationUrlOrDefault());
    EngineConfig pinned = new EngineConfig("E0", "http://h:8101", Role.BOTH, "https://attest:9/e0", "");
    assertEquals("https://attest:9/e0", pinned.attestationUrlOrDefault());
  }

  @Test
  void acceptedEntryKeepsEveryField() {
    NarwhalConfig c = NarwhalConfig.parse("""
        {"model": "m", "engines": [{"iid": "P0", "url": "https://p0.local:8443", "role": "prefill",
          "attestation_url": "https://p0.local:8443/attest", "kv_side_channel": "10.0.0.5:5600"}]}
        """);
    assertEquals(new EngineConfig("P0", "https://p0.local:8443", Role.PREFILL,
        "https://p0.local:8443/attest", "10.0.0.5:5600", "m"), c.engines().get(0));
  }

  @Test
  void rolesPermitTheirLegs() {
    assertTrue(Role.PREFILL.canPrefill());
    assertFalse(Role.PREFILL.canDecode());
    assertFalse(Role.DECODE.canPrefill());
    assertTrue(Role.DECODE.canDecode());
    assertTrue(Role.BOTH.canPrefill());
    assertTrue(Role.BOTH.canDecode());
  }

  @Test
  void roleWireNamesParseBack() {
    for (Role role : Role.values()) {
      assertEquals(role, Role.parse(role.wireName()));
    }
    assertEquals("prefill", Role.PREFILL.wireName());
    assertThrows(IllegalArgumentException.class, () -> Role.parse("gpu"));
  }

  @Test
  void restartPolicyWireNamesParseBack() {
    assertEquals(RestartPolicy.WHOLE_WAVE, RestartPolicy.parse("whole_wave"));
    assertEquals("individual", RestartPolicy.INDIVIDUAL.wireName());
    assertThrows(IllegalArgumentException.class, () -> RestartPolicy.parse("rolling"));
  }
}
