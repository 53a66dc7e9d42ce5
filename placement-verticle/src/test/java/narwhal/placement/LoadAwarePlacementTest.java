package narwhal.placement;

import io.vertx.core.json.JsonObject;
import narwhal.common.bus.LegsSent;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.PlacementConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Placement by engine load and by prefix (docs/operations.md#placement), on an injected clock. */
class LoadAwarePlacementTest {
  private final AtomicLong now = new AtomicLong(1_000_000);
  private static final List<EngineConfig> FLEET = List.of(engine("P0", Role.PREFILL), engine("P1", Role.PREFILL),
      engine("P2", Role.PREFILL), engine("P3", Role.PREFILL), engine("D0", Role.DECODE), engine("D1", Role.DECODE));

  private static EngineConfig engine(String iid, Role role) {
    return new EngineConfig(iid, "http://127.0.0.1:1/" + iid, role, "", "");
  }

  private PlacementTable table(String policy) {
    PlacementTable t = new PlacementTable(FLEET, now::get);
    t.configure(PlacementConfig.defaults().withPolicy(policy), 3);
    return t;
  }

  private EngineLoad reading(String iid, double running, double waiting, double kv) {
    return new EngineLoad(iid, running, waiting, kv, now.get(), "test", null);
  }

  private static String place(PlacementTable t, Phase phase, String affinity) {
    return t.reserve(phase, Set.of(), null, affinity).orElseThrow().iid();
  }

  @Test
  void decodeGoesToTheLeastLoadedEngineAndLegsSentSinceTheReadingCount() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 10, 0, 0.1));
    t.applyLoad(reading("D1", 4, 0, 0.1));
    List<String> picks = new ArrayList<>();
    for (int i = 0; i < 8; i++) picks.add(place(t, Phase.DECODE, null));
    assertEquals(List.of("D1", "D1", "D1", "D1", "D1", "D1"), picks.subList(0, 6),
        "D1 takes the burst until the legs sent since its reading make it as busy as D0: " + picks);
    assertTrue(picks.subList(6, 8).contains("D0"), "then D0 gets work too: " + picks);
    assertEquals("load", t.reserve(Phase.DECODE, Set.of(), null, null).orElseThrow().reason());
  }

  @Test
  void anIdleEnginesSlowedReadingIsNoStaleReadingUntilItsOwnCadenceIsLongPast() {
    // interval 1 s, idle engines read down to every 8 s: D1's third idle reading in a row is due 8 s after it was taken
    PlacementTable t = new PlacementTable(FLEET, now::get);
    t.configure(PlacementConfig.defaults().withPolicy(PlacementConfig.LOAD), 3);
    t.applyLoad(reading("D1", 0, 0, 0).afterIdle(3));
    now.addAndGet(5_000);
    t.applyLoad(reading("D0", 3, 0, 0.1));
    assertEquals("D1", place(t, Phase.DECODE, null), "D1 idles on its slowed cadence, 5 s into 8: the idlest engine, not "
        + "a stale one weighed above the busiest (fails: a reading older than three intervals was stale whatever its cadence)");
    now.addAndGet(6_000);
    t.applyLoad(reading("D0", 3, 0, 0.1));
    assertEquals("D0", place(t, Phase.DECODE, null), "11 s into D1's 8 s cadence its reading is stale: the read engine goes first");
  }

  @Test
  void thisReplicasLegsThatEndedSinceTheReadingAreNoLoad() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 0, 0, 0));
    t.applyLoad(reading("D1", 0, 0, 0));
    List<String> legs = new ArrayList<>();
    for (int i = 0; i < 5; i++) legs.add(t.reserve(Phase.DECODE, Set.of("D1"), null, null).orElseThrow().id());
    now.addAndGet(1);
    t.applyLoad(reading("D0", 5, 0, 0));
    t.applyLoad(reading("D1", 2, 0, 0));
    legs.forEach(t::release);
    assertEquals("D0", place(t, Phase.DECODE, null),
        "D0's five running requests were this replica's and have ended; D1's two belong to another replica");
  }

  @Test
  void thisReplicasOwnLegsQueuedAtAnEngineCountOnceNotAgainAsItsReadingsWaitingRequests() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 0, 0, 0));
    t.applyLoad(reading("D1", 0, 0, 0));
    for (int i = 0; i < 2; i++) t.reserve(Phase.DECODE, Set.of("D1"), null, null).orElseThrow();
    for (int i = 0; i < 2; i++) t.reserve(Phase.DECODE, Set.of("D0"), null, null).orElseThrow();
    now.addAndGet(1);
    t.applyLoad(reading("D0", 0, 2, 0));
    t.applyLoad(reading("D1", 2, 0, 0));
    List<String> next = List.of(place(t, Phase.DECODE, null), place(t, Phase.DECODE, null));
    assertTrue(next.contains("D0") && next.contains("D1"),
        "each engine holds this replica's two legs, queued on D0 and running on D1; no other work is there: " + next);
  }

  @Test
  void aMissingFailedOrStaleReadingIsUnknownNeverIdle() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 3, 0, 0));
    t.applyLoad(EngineLoad.failed("D1", now.get(), "test", "could not read /metrics"));
    assertEquals("D0", place(t, Phase.DECODE, null), "a failed reading is not an idle engine");
    int d1 = 0;
    for (int i = 0; i < 8; i++) if ("D1".equals(place(t, Phase.DECODE, null))) d1++;
    assertTrue(d1 >= 2 && d1 <= 4, "unknown counts as busier than the busiest reading, not as unusable: D1 got " + d1 + " of 8");

    PlacementTable stale = table(PlacementConfig.LOAD);
    stale.applyLoad(reading("D1", 0, 0, 0));
    now.addAndGet(10_000);
    stale.applyLoad(reading("D0", 2, 0, 0));
    assertEquals("D0", place(stale, Phase.DECODE, null), "D1's reading is three intervals old: unknown");

    PlacementTable none = table(PlacementConfig.LOAD);
    assertEquals("least_reserved", none.reserve(Phase.DECODE, Set.of(), null, null).orElseThrow().reason(),
        "with no reading at all, reservations decide");
  }

  @Test
  void anEngineWhoseReadingsKeepFailingGetsNoMoreWorkThanOneWithReadingsWhileLongLegsPileUp() {
    PlacementTable t = table(PlacementConfig.LOAD);
    // long requests: no leg ends; each interval D0 is read (it runs this replica's legs, nothing else) and D1's /metrics fails
    for (int interval = 0; interval < 5; interval++) {
      now.addAndGet(1_000);
      t.applyLoad(reading("D0", t.reserved("D0", Phase.DECODE), 0, 0));
      t.applyLoad(EngineLoad.failed("D1", now.get(), "test", "could not read /metrics: Timeout 500 (ms) fired"));
      for (int i = 0; i < 10; i++) place(t, Phase.DECODE, null);
    }
    int d0 = t.reserved("D0", Phase.DECODE);
    int d1 = t.reserved("D1", Phase.DECODE);
    assertTrue(d1 <= d0, "an engine of unknown load counts as the busiest known, never idle: this replica's legs still on it"
        + " count though its last reading failed; D1 (unknown) holds " + d1 + " legs, D0 (read) " + d0);
  }

  @Test
  void aSessionWhoseProducerIsOutOfServiceIsASpillInItsJournalReason() {
    PlacementTable t = table(PlacementConfig.CACHE_AWARE);
    for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 1, 0, 0));
    var home = leg(t, "session:conv-42", Set.of());
    assertEquals("session", home.reason());
    t.setState(home.iid(), narwhal.common.bus.EngineState.DRAINING);
    var moved = leg(t, "session:conv-42", Set.of());
    assertNotEquals(home.iid(), moved.iid());
    assertEquals("spill", moved.reason(), "the session's producer " + home.iid() + " is drained: " + moved.iid()
        + " is not where the conversation's blocks are (docs/metrics.md: spill, the session's producer was not a candidate)");
    var excluded = leg(t, "session:conv-43", Set.of());
    assertEquals("spill", leg(t, "session:conv-43", Set.of(excluded.iid())).reason(), "nor is a retry's other engine");
  }

  /** Reserves and releases at once (a leg that ended): the placement's choice without load piling up. */
  private static narwhal.common.bus.Reservation leg(PlacementTable t, String affinity, Set<String> exclude) {
    var r = t.reserve(Phase.PREFILL, exclude, null, affinity).orElseThrow();
    t.release(r.id());
    return r;
  }

  @Test
  void aPrefixStaysOnTheProducerThatComputedItOnEveryReplicaUntilThatProducerIsLoaded() {
    PlacementTable a = table(PlacementConfig.CACHE_AWARE);
    PlacementTable b = table(PlacementConfig.CACHE_AWARE);
    for (PlacementTable t : List.of(a, b)) {
      for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 1, 0, 0));
    }
    String affinity = "prefix:abc";
    var first = leg(a, affinity, Set.of());
    assertEquals("new_prefix", first.reason(), "a prefix seen for the first time goes by rendezvous within the load bound");
    String home = first.iid();
    var again = leg(a, affinity, Set.of());
    assertEquals(List.of(home, "prefix"), List.of(again.iid(), again.reason()), "then to the producer that computed it");

    b.learnPrefixes(a.drainPrefixes("a"));
    assertTrue(a.drainPrefixes("a").placed().isEmpty(), "a placement is sent once");
    var onB = leg(b, affinity, Set.of());
    assertEquals(List.of(home, "prefix"), List.of(onB.iid(), onB.reason()), "the other replica sends it there too");
    assertTrue(b.drainPrefixes("b").placed().isEmpty(), "a placement that changes nothing is not sent back");

    a.applyLoad(new EngineLoad(home, 40, 10, 0, now.get() + 1, "test", null));
    var spilled = leg(a, affinity, Set.of());
    assertNotEquals(home, spilled.iid(), "a loaded producer sheds its prefix");
    assertEquals("spill", spilled.reason());
    var next = leg(a, affinity, Set.of());
    assertEquals(List.of(spilled.iid(), "prefix"), List.of(next.iid(), next.reason()),
        "the producer it spilled to caches it now: the prefix stays there");
    b.learnPrefixes(a.drainPrefixes("a"));
    assertEquals(spilled.iid(), leg(b, affinity, Set.of()).iid(), "and the other replica learns the new home");

    var excluded = leg(b, affinity, Set.of(spilled.iid()));
    assertEquals(List.of(home, "prefix"), List.of(excluded.iid(), excluded.reason()),
        "with its newest home not a candidate (a failed attempt, ejected), the one before it still caches the prefix");
    assertEquals("session", b.reserve(Phase.PREFILL, Set.of(), null, "session:42").orElseThrow().reason());
  }

  @Test
  void groupsSpreadOverEveryProducerAndEveryReplicaAgreesOnceItLearns() {
    PlacementTable a = table(PlacementConfig.CACHE_AWARE);
    PlacementTable b = table(PlacementConfig.CACHE_AWARE);
    for (PlacementTable t : List.of(a, b)) {
      for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 0, 0, 0));
    }
    java.util.Map<String, String> homes = new java.util.HashMap<>();
    List<String> held = new ArrayList<>();
    for (int group = 0; group < 40; group++) {
      String affinity = "prefix:" + Long.toHexString(narwhal.common.bus.Rendezvous.hash("system prompt " + group));
      var r = a.reserve(Phase.PREFILL, Set.of(), null, affinity).orElseThrow();
      held.add(r.id());
      homes.put(affinity, r.iid());
    }
    held.forEach(a::release);
    assertEquals(Set.of("P0", "P1", "P2", "P3"), new HashSet<>(homes.values()), "first requests spread by load");
    b.learnPrefixes(a.drainPrefixes("a"));
    assertEquals(40, b.knownPrefixes());
    homes.forEach((affinity, home) -> assertEquals(home, leg(b, affinity, Set.of()).iid(), "replica B agrees for " + affinity));
  }

  @Test
  void aRePointedOrRemovedProducerIsNoLongerAPrefixHome() {
    PlacementTable t = table(PlacementConfig.CACHE_AWARE);
    for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 0, 0, 0));
    String home = leg(t, "prefix:abc", Set.of()).iid();
    List<EngineConfig> moved = new ArrayList<>();
    for (EngineConfig e : FLEET) moved.add(e.iid().equals(home) ? new EngineConfig(home, "http://127.0.0.1:2/moved", Role.PREFILL, "", "") : e);
    t.setEngines(moved);
    for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 0, 0, 0));
    assertEquals("new_prefix", leg(t, "prefix:abc", Set.of()).reason(), "the engine at the new url caches nothing of the prefix");
    assertEquals(0, t.knownPrefixes() - 1, "the prefix is known again, on the producer it went to now");

    String second = leg(t, "prefix:abc", Set.of()).iid();
    t.setEngines(FLEET.stream().filter(e -> !e.iid().equals(second)).toList());
    assertEquals(0, t.knownPrefixes(), "a removed engine's prefixes are forgotten");
  }

  @Test
  void aPlacementOnAnEngineAnotherReplicaHasAtAnotherUrlIsNotLearned() {
    PlacementTable a = table(PlacementConfig.CACHE_AWARE);
    PlacementTable b = table(PlacementConfig.CACHE_AWARE);
    List<EngineConfig> moved = new ArrayList<>();
    for (EngineConfig e : FLEET) moved.add(e.iid().equals("P0") ? new EngineConfig("P0", "http://127.0.0.1:2/moved", Role.PREFILL, "", "") : e);
    a.setEngines(moved);
    for (PlacementTable t : List.of(a, b)) {
      for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 0, 0, 0));
    }
    // B has not re-read the fleet file yet: it places prefixes on P0 at its old url, where A's P0 no longer is
    List<String> onOldP0 = new ArrayList<>();
    for (int group = 0; onOldP0.size() < 3 && group < 100; group++) {
      String affinity = "prefix:" + group;
      if (leg(b, affinity, Set.of("P1", "P2", "P3")).iid().equals("P0")) onOldP0.add(affinity);
    }
    leg(b, "prefix:elsewhere", Set.of("P0"));
    a.learnPrefixes(b.drainPrefixes("b"));
    assertEquals(1, a.knownPrefixes(), "only the placement on an engine A has at the same url is learned");
    for (String affinity : onOldP0) {
      assertEquals("new_prefix", leg(a, affinity, Set.of()).reason(), "A's P0 (the new url) holds none of " + affinity);
    }
    b.learnPrefixes(a.drainPrefixes("a"));
    assertTrue(b.knownPrefixes() >= 4, "nor does B take A's placements on the new P0 for its old one, but the rest");
    a.setEngines(FLEET.stream().filter(e -> !e.iid().equals("P3")).toList());
    b.learnPrefixes(a.drainPrefixes("a"));
    a.learnPrefixes(new narwhal.common.bus.PrefixesPlaced("c", java.util.Map.of("prefix:gone", "P3", "prefix:x", "P9"),
        java.util.Map.of("P3", "http://127.0.0.1:1/P3", "P9", "http://127.0.0.1:1/P9")));
    a.setEngines(moved);
    for (String p : List.of("P0", "P1", "P2", "P3")) a.applyLoad(reading(p, 0, 0, 0));
    assertEquals("new_prefix", leg(a, "prefix:gone", Set.of()).reason(),
        "a placement on an engine this replica does not have is not kept for when an engine of that iid is added");
  }

  @Test
  void aPrefixIsRememberedPerModelSoModelsSharingASystemPromptKeepTheirOwnProducers() {
    List<EngineConfig> fleet = new ArrayList<>();
    for (String m : List.of("a", "b", "c")) {
      for (int i = 0; i < 2; i++) fleet.add(new EngineConfig("P" + m + i, "http://127.0.0.1:1/P" + m + i, Role.PREFILL, "", "", m));
    }
    PlacementTable t = new PlacementTable(fleet, now::get);
    t.configure(PlacementConfig.defaults().withPolicy(PlacementConfig.CACHE_AWARE), 3);
    for (EngineConfig e : fleet) t.applyLoad(reading(e.iid(), 0, 0, 0));
    String affinity = "prefix:the same system prompt";
    java.util.Map<String, String> homes = new java.util.HashMap<>();
    for (String m : List.of("a", "b", "c")) {
      var first = t.reserve(Phase.PREFILL, Set.of(), null, affinity, m).orElseThrow();
      t.release(first.id());
      assertEquals("new_prefix", first.reason(), "model " + m + " never computed the prefix: not a spill");
      assertTrue(first.iid().startsWith("P" + m), "only engines of model " + m + ": " + first.iid());
      homes.put(m, first.iid());
    }
    now.addAndGet(1);
    for (EngineConfig e : fleet) t.applyLoad(reading(e.iid(), homes.containsValue(e.iid()) ? 1 : 0, 0, 0));
    for (String m : List.of("a", "b", "c")) {
      var again = t.reserve(Phase.PREFILL, Set.of(), null, affinity, m).orElseThrow();
      t.release(again.id());
      assertEquals(List.of(homes.get(m), "prefix"), List.of(again.iid(), again.reason()),
          "model " + m + " goes back to its producer that computed the prefix, whatever the other models did");
    }
  }

  @Test
  void anEngineClaimingAnAbsurdQueueIsAFailedReadingAndDoesNotStopEveryOtherPrefixFromSpilling() {
    PlacementTable t = table(PlacementConfig.CACHE_AWARE);
    for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 0, 0, 0));
    String home = leg(t, "prefix:abc", Set.of("P3")).iid();
    now.addAndGet(1);
    EngineLoad absurd = EngineLoad.parse("P3", """
        vllm:num_requests_running{engine="0",model_name="m"} 1e308
        vllm:num_requests_waiting{engine="0",model_name="m"} 1e308
        """, now.get(), "test");
    assertTrue(!absurd.ok() && absurd.error().contains("not a load"), "a queue no engine can have is not a load: " + absurd);
    assertTrue(!EngineLoad.parse("P3", "vllm:num_requests_running 2e9\nvllm:num_requests_waiting 0\n", 0, "t").ok());
    assertTrue(EngineLoad.parse("P3", "vllm:num_requests_running 250000\nvllm:num_requests_waiting 1e6\n", 0, "t").ok());
    assertTrue(!EngineLoad.parse("P3", "vllm:num_requests_running 9e8\nvllm:num_requests_waiting 9e8\n", 0, "t").ok(),
        "a queue (running + waiting) of 1.8e9 requests is more than 1e9 (docs/operations.md), though neither gauge is");
    t.applyLoad(absurd);
    for (String p : List.of("P0", "P1", "P2")) t.applyLoad(reading(p, p.equals(home) ? 40 : 0, 0, 0));
    var r = leg(t, "prefix:abc", Set.of());
    assertEquals("spill", r.reason(), "the loaded home sheds its prefix whatever P3 claims: " + r);
    assertNotEquals(home, r.iid());
  }

  @Test
  void withNoReadingAtAllAPrefixStillGoesToItsProducerWhileItsReservationsAreWithinTheBound() {
    PlacementTable t = table(PlacementConfig.CACHE_AWARE);
    // every /metrics fails (a vLLM that renamed its gauges, a proxy that does not pass /metrics, engines too busy to
    // answer in time): the engines' load is unknown, this replica's reservations decide, and the index still holds
    for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(EngineLoad.failed(p, now.get(), "test", "no vllm gauges"));
    var first = leg(t, "prefix:abc", Set.of());
    assertEquals("least_reserved", first.reason(), "a prefix seen first: by reservations");
    for (int i = 0; i < 6; i++) {
      var again = leg(t, "prefix:abc", Set.of());
      assertEquals(List.of(first.iid(), "prefix"), List.of(again.iid(), again.reason()), "request " + i + " of the prefix");
    }
    List<String> held = new ArrayList<>();
    Set<String> others = new HashSet<>(List.of("P0", "P1", "P2", "P3"));
    others.remove(first.iid());
    for (int i = 0; i < 3; i++) held.add(t.reserve(Phase.PREFILL, others, null, null).orElseThrow().id());
    var spilled = leg(t, "prefix:abc", Set.of());
    assertNotEquals(first.iid(), spilled.iid(), "its producer holding three of this replica's legs and the others none sheds it");
    assertEquals("least_reserved", spilled.reason());
    held.forEach(t::release);
    assertEquals("session", leg(t, "session:7", Set.of()).reason(), "a session keeps its producer too");
  }

  @Test
  void anEngineOnAFailureStreakGetsLessWorkBeforeItIsEjected() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 2, 0, 0));
    t.applyLoad(reading("D1", 2, 0, 0));
    t.applyStreak("D1", "stream", 2);
    int d1 = 0;
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      var leg = t.reserve(Phase.DECODE, Set.of(), null, null).orElseThrow();
      ids.add(leg.id());
      if ("D1".equals(leg.iid())) d1++;
    }
    assertTrue(d1 <= 3, "D1, two failures from ejection, got " + d1 + " of 12");
    ids.forEach(t::release);
    t.applyStreak("D1", "stream", 0);
    now.addAndGet(1);
    t.applyLoad(reading("D0", 2, 0, 0));
    t.applyLoad(reading("D1", 2, 0, 0));
    int again = 0;
    for (int i = 0; i < 12; i++) if ("D1".equals(place(t, Phase.DECODE, null))) again++;
    assertEquals(6, again, "a reset streak weighs nothing");
  }

  @Test
  void promptsThatShareNothingArePlacedByLoadNotPiledOnTheProducerTheirHashNames() {
    PlacementTable t = table(PlacementConfig.CACHE_AWARE);
    for (String p : List.of("P0", "P1", "P2", "P3")) t.applyLoad(reading(p, 0, 0, 0));
    java.util.Map<String, Integer> perProducer = new java.util.TreeMap<>();
    for (int i = 0; i < 12; i++) {
      String affinity = "prefix:" + Long.toHexString(narwhal.common.bus.Rendezvous.hash("unique prompt " + i));
      perProducer.merge(place(t, Phase.PREFILL, affinity), 1, Integer::sum);
    }
    // within the load bound (load_factor x mean + 1) their hashes put up to 4 on one producer while another had 2: a
    // prefill behind another waits for it (the placement benchmark's no-sharing TTFT p50 was 1.69x least_reserved's)
    assertEquals(java.util.Map.of("P0", 3, "P1", 3, "P2", 3, "P3", 3), perProducer,
        "12 unique prompts held at once: 3 on each producer, as by load");
  }

  @Test
  void aFailureStreakWeighsLessAsTimePassesAndNothingAfterAWhile() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 0, 0, 0));
    t.applyLoad(reading("D1", 0, 0, 0));
    t.applyStreak("D1", "stream", 1);
    for (int i = 0; i < 6; i++) {
      var r = t.reserve(Phase.DECODE, Set.of(), null, null).orElseThrow();
      assertEquals("D0", r.iid(), "one request at a time: the engine with a fresh failure gets none");
      t.release(r.id());
    }
    now.addAndGet(PlacementTable.STREAK_FORGET_MS + 1);
    t.applyLoad(reading("D0", 0, 0, 0));
    t.applyLoad(reading("D1", 0, 0, 0));
    int d1 = 0;
    for (int i = 0; i < 6; i++) {
      var r = t.reserve(Phase.DECODE, Set.of(), null, null).orElseThrow();
      if (r.iid().equals("D1")) d1++;
      t.release(r.id());
    }
    assertEquals(3, d1, "no failure since " + PlacementTable.STREAK_FORGET_MS + " ms: D1 is as good as D0 again, with no success needed");
  }

  @Test
  void otherReplicasLegsSinceTheSameReadingCount() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 0, 0, 0));
    t.applyLoad(reading("D1", 0, 0, 0));
    t.applyOthersSent(List.of(Map.of("D0", new LegsSent.Count(now.get(), 5), "D1", new LegsSent.Count(now.get() - 1, 50))));
    for (int i = 0; i < 5; i++) assertEquals("D1", place(t, Phase.DECODE, null),
        "another replica sent 5 to D0 since its reading; its count for an older D1 reading is void");
  }

  @Test
  void otherReplicasCountsThatSumPastTheLargestIntDoNotWrapToAnIdleEngine() {
    PlacementTable t = table(PlacementConfig.LOAD);
    t.applyLoad(reading("D0", 0, 0, 0));
    t.applyLoad(reading("D1", 0, 0, 0));
    Map<String, LegsSent.Count> max = Map.of("D0", new LegsSent.Count(now.get(), Integer.MAX_VALUE));
    Map<String, LegsSent.Count> one = Map.of("D0", new LegsSent.Count(now.get(), 1));
    t.applyOthersSent(List.of(max, one));
    for (int i = 0; i < 5; i++) assertEquals("D1", place(t, Phase.DECODE, null),
        "two counts on the bus, each a valid int, that sum past Integer.MAX_VALUE make D0 the busiest, not the idlest "
            + "(fails: the sum wraps to -2147483648; live, published as x1 and x2 on narwhal.placement.sent, /narwhal/state "
            + "showed D0 sent_since -2147483648 and D0 took 50 of 60 decodes from 3 replicas)");
  }

  @Test
  void vllmMetricsTextIsReadAcrossRanks() {
    String text = """
        # HELP vllm:num_requests_running Number of requests in model execution batches.
        # TYPE vllm:num_requests_running gauge
        vllm:num_requests_running{engine="0",model_name="m"} 3.0
        vllm:num_requests_running{engine="1",model_name="m"} 2.0
        vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
        vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
        vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
        """;
    EngineLoad load = EngineLoad.parse("D0", text, 5, "r");
    assertTrue(load.ok());
    assertEquals(5.0, load.running());
    assertEquals(1.0, load.waiting());
    assertEquals(0.5, load.kvUsage());
    assertTrue(!EngineLoad.parse("D0", "up 1\n", 5, "r").ok(), "no queue gauges: not a reading");
    for (String bad : java.util.List.of("NaN", "+Inf", "-1000")) {
      EngineLoad poisoned = EngineLoad.parse("D0", "vllm:num_requests_running " + bad + "\nvllm:num_requests_waiting 0\n", 5, "r");
      assertTrue(!poisoned.ok(), bad + " is no load: a failed reading, never an idle or a poisoned one");
      assertEquals("D0", EngineLoad.fromJson(new JsonObject(poisoned.toJson().encode())).iid(), "and it survives the shared map");
    }
    assertEquals(null, EngineLoad.fromJson(new JsonObject().put("iid", "D0").put("read_at_ms", 1).put("running", "NaN")),
        "a malformed shared entry is no reading, not an exception that stops the round");
  }

  @Test
  void aDecodeLegWaitingForItsKvIsNoQueueWhenTheEngineSaysWhyItWaits() {
    String text = """
        vllm:num_requests_running{engine="0",model_name="m"} 2.0
        vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
        vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 1.0
        vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="deferred"} 6.0
        """;
    EngineLoad load = EngineLoad.parse("D0", text, 5, "r");
    assertEquals(7.0, load.waiting(), "the load is every request the engine holds");
    assertEquals(1.0, load.queued(), "its queue is those waiting for a place in the batch, not six pulling their KV");
    EngineLoad shared = EngineLoad.fromJson(new JsonObject(load.toJson().encode()));
    assertEquals(1.0, shared.queued(), "a reading shared on the bus keeps its queue");
    assertEquals(7.0, EngineLoad.parse("D0", "vllm:num_requests_running 0\nvllm:num_requests_waiting 7\n", 5, "r").queued(),
        "a vLLM that does not say why has all its waiting taken as queued");
    assertEquals(7.0, EngineLoad.fromJson(new JsonObject().put("iid", "D0").put("read_at_ms", 1).put("waiting", 7)).queued(),
        "a reading from a replica that does not share the queue: the waiting, whole");
    assertEquals(7.0, EngineLoad.fromJson(new JsonObject().put("iid", "D0").put("read_at_ms", 1).put("waiting", 7)
        .put("queued", 1e12)).queued(), "a queue larger than the waiting is no reading of a real engine: at most the waiting");
  }

  @Test
  void twoReplicasThatSeeTheSameLeastLoadedPutANewPrefixOnTheSameProducerBeforeAnyGossip() {
    PlacementTable a = table(PlacementConfig.CACHE_AWARE);
    PlacementTable b = table(PlacementConfig.CACHE_AWARE);
    // the replicas' views differ on the busier producers (each one's own legs since the readings) but agree that P1
    // and P2 are the least loaded
    a.applyLoad(reading("P0", 1, 0, 0));
    a.applyLoad(reading("P1", 0, 0, 0));
    a.applyLoad(reading("P2", 0, 0, 0));
    a.applyLoad(reading("P3", 2, 0, 0));
    b.applyLoad(reading("P0", 2, 0, 0));
    b.applyLoad(reading("P1", 0, 0, 0));
    b.applyLoad(reading("P2", 0, 0, 0));
    b.applyLoad(reading("P3", 1, 0, 0));
    Set<String> used = new HashSet<>();
    for (int group = 0; group < 40; group++) {
      String affinity = "prefix:new-" + group;
      var onA = leg(a, affinity, Set.of());
      var onB = leg(b, affinity, Set.of());
      assertEquals(onA.iid(), onB.iid(), affinity + " lands on one producer whichever replica takes it first");
      assertEquals("new_prefix", onA.reason());
      used.add(onA.iid());
    }
    assertEquals(Set.of("P1", "P2"), used, "new prefixes spread over the least loaded producers, and only those");

    PlacementTable idleA = table(PlacementConfig.CACHE_AWARE);
    PlacementTable idleB = table(PlacementConfig.CACHE_AWARE);
    for (String p : List.of("P0", "P1", "P2", "P3")) {
      idleA.applyLoad(reading(p, 0, 0, 0));
      idleB.applyLoad(reading(p, 0, 0, 0));
    }
    used.clear();
    for (int group = 0; group < 40; group++) {
      String affinity = "prefix:idle-" + group;
      String onA = leg(idleA, affinity, Set.of()).iid();
      assertEquals(onA, leg(idleB, affinity, Set.of()).iid(), affinity + " on an idle fleet: one producer on both replicas");
      used.add(onA);
    }
    assertEquals(Set.of("P0", "P1", "P2", "P3"), used, "an idle fleet's new prefixes spread over every producer");
  }
}
