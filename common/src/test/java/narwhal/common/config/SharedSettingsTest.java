package narwhal.common.config;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The digest of the settings replicas must share: one entry per {@code recovery.*} key, {@code serving.max_attempts}
 * and each engine; a difference is named by its key, and no value appears in the digest.
 */
class SharedSettingsTest {

  private static Map<String, String> digest(JsonObject fleet) {
    return SharedSettings.digest(NarwhalConfig.fromJson(fleet));
  }

  @Test
  void everySharedKeyHasADigestAndNoValueShows() {
    Map<String, String> d = digest(Fleets.withSection("recovery", "{\"eject_after\": 7}"));
    assertEquals(Set.of("recovery.eject_after", "recovery.monitor_interval_s", "recovery.readmit_every", "recovery.liveness_every",
        "recovery.liveness_misses", "recovery.failure_quarantine_s", "recovery.engine_restart_policy", "serving.max_attempts",
        "placement.policy", "placement.session_header", "placement.prefix_block_chars", "placement.prefix_blocks",
        "engines.P0", "engines.D0"), d.keySet());
    assertTrue(d.values().stream().allMatch(v -> v.matches("[0-9a-f]{12}")), "hashes only: " + d);
    assertEquals(List.of("recovery.eject_after", "recovery.monitor_interval_s", "recovery.readmit_every", "recovery.liveness_every",
        "recovery.liveness_misses", "recovery.failure_quarantine_s", "recovery.engine_restart_policy", "serving.max_attempts",
        "placement.policy", "placement.session_header", "placement.prefix_block_chars", "placement.prefix_blocks", "engines"),
        SharedSettings.GROUPS);
  }

  @Test
  void differencesAreNamedByKey() {
    Map<String, String> base = digest(Fleets.minimal());
    assertEquals(Set.of(), SharedSettings.differing(base, digest(Fleets.minimal())));
    assertEquals(Set.of("recovery.eject_after"), SharedSettings.differing(base, digest(Fleets.withSection("recovery", "{\"eject_after\": 5}"))));
    assertEquals(Set.of("serving.max_attempts"), SharedSettings.differing(base, digest(Fleets.withSection("serving", "{\"max_attempts\": 2}"))));
    // a prompt's prefix is hashed from these: replicas that differ never agree on a prefix, and share no prefix index
    assertEquals(Set.of("placement.prefix_blocks"), SharedSettings.differing(base, digest(Fleets.withSection("placement", "{\"prefix_blocks\": 4}"))));
    assertEquals(Set.of("placement.prefix_block_chars", "placement.session_header"), SharedSettings.differing(base,
        digest(Fleets.withSection("placement", "{\"prefix_block_chars\": 128, \"session_header\": \"x-conversation\"}"))));
    assertEquals(Set.of("placement.policy"), SharedSettings.differing(base, digest(Fleets.withSection("placement", "{\"policy\": \"load\"}"))));
    assertEquals(Set.of(), SharedSettings.differing(base, digest(Fleets.withSection("placement", "{\"load_factor\": 2}"))),
        "each replica may bound its own producers' load");
    JsonObject moved = Fleets.minimal();
    moved.getJsonArray("engines").getJsonObject(1).put("url", "http://127.0.0.1:8104");
    assertEquals(Set.of("engines.D0"), SharedSettings.differing(base, digest(moved)));
    JsonObject more = Fleets.minimal();
    more.getJsonArray("engines").add(new JsonObject().put("iid", "D1").put("url", "http://127.0.0.1:8105").put("role", "decode"));
    assertEquals(Set.of("engines.D1"), SharedSettings.differing(base, digest(more)), "an engine one side lists");
    assertEquals("engines", SharedSettings.group("engines.D1"));
    assertTrue(SharedSettings.GROUPS.contains(SharedSettings.group("recovery.eject_after")));
  }
}
