package narwhal.placement;

import narwhal.common.bus.EngineState;
import narwhal.common.bus.Reservation;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PlacementTableTest {
  private static EngineConfig engine(String iid, Role role) {
    return new EngineConfig(iid, "http://127.0.0.1:1/" + iid, role, "", "");
  }

  private final PlacementTable table = new PlacementTable(List.of(
      engine("P0", Role.PREFILL), engine("P1", Role.PREFILL), engine("D0", Role.DECODE), engine("B0", Role.BOTH)));

  @Test
  void anEngineRemovedAndAddedBackWhileItsLegsRunCountsThemUntilTheyEndNeverBelowZero() {
    List<EngineConfig> fleet = List.of(engine("P0", Role.PREFILL), engine("P1", Role.PREFILL), engine("D0", Role.DECODE));
    PlacementTable t = new PlacementTable(fleet);
    List<Reservation> running = new ArrayList<>();
    for (int i = 0; i < 3; i++) running.add(t.reserve(Phase.PREFILL, Set.of("P1"), null).orElseThrow());
    t.setEngines(List.of(fleet.get(1), fleet.get(2)));
    t.setEngines(fleet);
    running.forEach(r -> t.release(r.id()));
    assertEquals(0, t.reserved("P0", Phase.PREFILL), "P0's three legs ended: it holds none, not minus three");
    List<String> picks = new ArrayList<>();
    for (int i = 0; i < 4; i++) picks.add(t.reserve(Phase.PREFILL, Set.of(), null).orElseThrow().iid());
    assertEquals(2, picks.stream().filter("P0"::equals).count(), "P0 and P1 share new legs evenly: " + picks);
  }

  @Test
  void rolesDecideCandidates() {
    for (int i = 0; i < 6; i++) {
      String iid = table.reserve(Phase.DECODE, Set.of(), null).orElseThrow().iid();
      assertTrue(iid.equals("D0") || iid.equals("B0"), iid);
    }
  }

  @Test
  void aLocalReservationTakesOnlyABothEngineAndSaysLocal() {
    for (int i = 0; i < 3; i++) {
      Reservation local = table.reserve(Phase.DECODE, Set.of(), null, null, null, true).orElseThrow();
      assertEquals("B0", local.iid());
      assertEquals(Phase.DECODE, local.phase());
      assertEquals(Reservation.LOCAL, local.reason(), "even as the only candidate");
    }
    assertEquals(3, table.reserved("B0", Phase.DECODE));
    assertTrue(table.reserve(Phase.DECODE, Set.of("B0"), null, null, null, true).isEmpty(), "no both engine left: none");
    table.setState("B0", EngineState.EJECTED);
    assertTrue(table.reserve(Phase.DECODE, Set.of(), null, null, null, true).isEmpty(), "an ejected both engine is none");
    assertEquals("D0", table.reserve(Phase.DECODE, Set.of(), null, null, null, false).orElseThrow().iid());
  }

  @Test
  void leastReservedWinsAndTiesRotate() {
    List<String> picks = new ArrayList<>();
    for (int i = 0; i < 3; i++) picks.add(table.reserve(Phase.PREFILL, Set.of(), null).orElseThrow().iid());
    assertEquals(3, Set.copyOf(picks).size(), "each prefill engine once before any twice: " + picks);
    table.release(table.reserve(Phase.PREFILL, Set.of(), null).orElseThrow().id());
    String next = table.reserve(Phase.PREFILL, Set.of(), null).orElseThrow().iid();
    assertTrue(picks.contains(next));
    assertEquals(1, table.reserved("P0", Phase.PREFILL));
  }

  @Test
  void releasedReservationsFreeTheirEngineOnce() {
    Reservation r = table.reserve(Phase.PREFILL, Set.of("P1", "B0"), null).orElseThrow();
    assertEquals("P0", r.iid());
    assertTrue(table.release(r.id()));
    assertFalse(table.release(r.id()), "a second release changes nothing");
    assertEquals(0, table.reserved("P0", Phase.PREFILL));
    assertEquals(0, table.totalReservations());
  }

  @Test
  void avoidedEngineIsUsedOnlyWhenNoOtherCan() {
    assertEquals("D0", table.reserve(Phase.DECODE, Set.of(), "B0").orElseThrow().iid());
    assertEquals("D0", table.reserve(Phase.DECODE, Set.of(), "B0").orElseThrow().iid(), "avoidance beats least-reserved");
    assertEquals("B0", table.reserve(Phase.DECODE, Set.of("D0"), "B0").orElseThrow().iid(), "the avoided engine is the only one left");
  }

  @Test
  void onlyServingEnginesAreCandidates() {
    table.setState("D0", EngineState.EJECTED);
    table.setState("B0", EngineState.HELD);
    assertTrue(table.reserve(Phase.DECODE, Set.of(), null).isEmpty());
    assertEquals("decode", table.unplaceablePhase().orElseThrow());
    table.setState("B0", EngineState.SERVING);
    assertEquals("B0", table.reserve(Phase.DECODE, Set.of(), null).orElseThrow().iid());
  }

  @Test
  void exclusionsAreRespected() {
    assertTrue(table.reserve(Phase.DECODE, Set.of("D0", "B0"), null).isEmpty());
  }
}
