package narwhal.placement;

import narwhal.common.bus.EngineState;
import narwhal.common.bus.LegsSent;
import narwhal.common.bus.PrefixSnapshot;
import narwhal.common.bus.PrefixesPlaced;
import narwhal.common.bus.Rendezvous;
import narwhal.common.bus.Reservation;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.PlacementConfig;
import narwhal.common.config.Role;
import narwhal.common.fault.Phase;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Which engine takes a phase of a request (docs/operations.md#placement), and how many reservations each engine holds
 * per phase. Only serving engines whose role permits the phase are candidates; an engine to avoid is passed over
 * whenever another candidate exists. Policies: {@code least_reserved} (fewest of this replica's reservations, ties
 * rotate); {@code load} (lowest load from the engines' own readings plus the legs the cluster sent since, weighted up
 * by failure streaks that fade over {@link #STREAK_FORGET_MS}; an engine without a fresh reading counts as the busiest
 * known, never idle); {@code cache_aware} (as {@code load}, but a prefill whose prefix some replica placed lately goes to
 * the newest of its {@link PrefixIndex} producers whose load is within {@code load_factor} of the mean, where its KV
 * blocks are cached; a prefix seen for the first time goes by load, and a session to the first engine within the bound
 * in the session's rendezvous order, the same on every replica).
 * A request naming a model has as candidates only the engines serving it: the engine's own {@code model}, or a name
 * (an alias, a LoRA adapter) its last {@code /v1/models} listing holds. A local reservation (a short prompt run whole,
 * {@code placement.local_prefill_max_tokens}) has as candidates only {@code both} engines.
 * Thread-safe: the verticle updates it, routers on any event loop of the node reserve and release through it.
 */
final class PlacementTable {
  private final Map<String, Slot> slots = new LinkedHashMap<>();
  /**
   * Bumped whenever what {@link #sentSinceReadings} would return may have changed (a leg sent or ended, a reading or an
   * engine list that drops a count above 0): the exchange, every 100 ms, builds the counts again only then.
   */
  private long sentVersion;
  /**
   * Removed engines whose legs still run: their reservations release here, and an engine added back before they end
   * takes its slot again (its legs still run on it). Without this, a leg released on the slot of an engine added back
   * took the new slot's count below zero, and placement took the engine for the idlest of all.
   */
  private final Map<String, Slot> retired = new HashMap<>();
  private final Map<String, Reservation> reservations = new HashMap<>();
  /** For each reservation, the time of its engine's reading when it was made (0: none). */
  private final Map<String, Long> madeAgainst = new HashMap<>();
  private final Map<Phase, Integer> rotation = new HashMap<>();
  private final java.util.function.LongSupplier clockMs;
  private PlacementConfig settings = PlacementConfig.defaults();
  private int ejectAfter = 3;
  private long nextId;
  /** How long a failure streak weighs against an engine: fully at the failure, linearly less, nothing after this. */
  static final long STREAK_FORGET_MS = 30_000;
  /** The reason of a prefix placed for the first time (no home known): by rendezvous within the load bound. */
  static final String NEW_PREFIX = "new_prefix";
  private final PrefixIndex prefixes = new PrefixIndex();

  /** An engine as placement sees it. */
  private static final class Slot {
    EngineConfig engine;
    final long hash;
    EngineState state = EngineState.SERVING;
    final int[] reserved = new int[Phase.values().length];
    EngineLoad load;
    /**
     * Requests queued for the engine's batch by the reading before {@link #load} (0: none, or it failed): an engine is
     * saturated by two readings in a row, not by one that caught its queue full for a moment.
     */
    double queuedBefore;
    /**
     * Legs this replica sent since {@link #load} was read and still holds (the reading counts those that ran before
     * it; a leg that ended since is no load), and the other replicas' count against the same reading.
     */
    int sent;
    int othersSent;
    /**
     * Whether this replica placed a leg on the engine since {@link #load} was applied, ended or not: an idle engine's
     * slowed reading is due again at once, and the owner must hear so even of a leg that ended before the exchange.
     */
    boolean legSinceReading;
    /** Whether another replica counted a leg (ended or not) against the reading this replica holds. */
    boolean othersLegs;
    /** When this replica last placed a leg on the engine (its clock), 0 for never. */
    long lastLegAtMs;
    /** This replica's legs on the engine when {@link #load} was applied: the reading's share that is this replica's. */
    int ownAtReading;
    final Map<String, Integer> streaks = new HashMap<>();
    int maxStreak;
    /** When the streak last grew (the table's clock). */
    long streakAtMs;
    /** The model cards of the engine's last {@code /v1/models} listing, by id; null until one is read. */
    Map<String, io.vertx.core.json.JsonObject> listed;

    /** What was read of the engine (listing, load, legs counted against the load) no longer holds. */
    void forgetReadings() {
      listed = null;
      load = null;
      queuedBefore = 0;
      sent = 0;
      othersSent = 0;
      legSinceReading = false;
      othersLegs = false;
    }

    boolean serves(String model) {
      return model == null || engine.model().equals(model) || listed != null && listed.containsKey(model);
    }

    Slot(EngineConfig engine) {
      this.engine = engine;
      this.hash = Rendezvous.hash(engine.iid());
    }
  }

  public PlacementTable(List<EngineConfig> engines) {
    this(engines, System::currentTimeMillis);
    this.settings = PlacementConfig.defaults().withPolicy(PlacementConfig.LEAST_RESERVED);
  }

  /** @param clockMs wall clock of the readings (epoch ms): a reading older than its cadence and two intervals more is stale */
  PlacementTable(List<EngineConfig> engines, java.util.function.LongSupplier clockMs) {
    this.clockMs = clockMs;
    setEngines(engines);
  }

  /** The placement keys and the breaker's {@code recovery.eject_after} (failure streaks weigh against it). */
  synchronized void configure(PlacementConfig settings, int ejectAfter) {
    this.settings = settings;
    this.ejectAfter = Math.max(1, ejectAfter);
  }

  synchronized String policy() {
    return settings.policy();
  }

  /** Replaces the engine list; engines that stay keep their state and reservations, removed ones keep theirs until released. */
  public synchronized void setEngines(List<EngineConfig> engines) {
    sentVersion++;
    Map<String, Slot> kept = new LinkedHashMap<>();
    for (EngineConfig engine : engines) {
      Slot slot = slots.get(engine.iid());
      if (slot == null) slot = retired.remove(engine.iid());
      if (slot == null) {
        slot = new Slot(engine);
      } else if (!slots.containsKey(engine.iid())) {
        // added back while legs made before its removal still run: it keeps their count, nothing else
        slot.forgetReadings();
        slot.state = EngineState.SERVING;
      }
      if (!engine.equals(slot.engine)) {
        prefixes.forget(engine.iid());
        slot.forgetReadings();
      }
      slot.engine = engine;
      kept.put(engine.iid(), slot);
    }
    slots.forEach((iid, slot) -> {
      if (kept.containsKey(iid)) return;
      prefixes.forget(iid);
      if (holds(slot)) retired.put(iid, slot);
    });
    slots.clear();
    slots.putAll(kept);
  }

  /** The url the fleet lists {@code iid} at; null for an engine it does not list. */
  synchronized String url(String iid) {
    Slot slot = slots.get(iid);
    return slot == null ? null : slot.engine.url();
  }

  /** Whether the fleet lists {@code engine} as it is: this iid at this url, role and model (not removed, not re-pointed). */
  synchronized boolean lists(EngineConfig engine) {
    Slot slot = slots.get(engine.iid());
    return slot != null && engine.equals(slot.engine);
  }

  public synchronized void setState(String iid, EngineState state) {
    Slot slot = slots.get(iid);
    if (slot != null) slot.state = state;
  }

  public synchronized Optional<EngineState> state(String iid) {
    Slot slot = slots.get(iid);
    return slot == null ? Optional.empty() : Optional.of(slot.state);
  }

  /**
   * The engines' queues for {@code model} under {@code queueMax} requests waiting each
   * ({@link narwhal.common.bus.LocalPlacement#room}): saturated when every serving engine of a phase that serves it had
   * {@code queueMax} queued by its last two readings (one reading can catch a queue full for a moment); room, per phase
   * the sum of {@code queueMax - queued} (at least 0), the smaller phase's.
   * An engine whose reading failed, is stale (older than its cadence and two intervals more) or missing leaves its phase unbounded.
   */
  synchronized narwhal.common.bus.LocalPlacement.Room room(String model, int queueMax) {
    if (queueMax <= 0) return narwhal.common.bus.LocalPlacement.Room.UNBOUNDED;
    long now = clockMs.getAsLong();
    PhaseRoom prefill = phaseRoom(Phase.PREFILL, model, queueMax, now);
    PhaseRoom decode = phaseRoom(Phase.DECODE, model, queueMax, now);
    long starts = Math.min(prefill.starts(), decode.starts());
    if (starts >= Integer.MAX_VALUE) return narwhal.common.bus.LocalPlacement.Room.UNBOUNDED;
    return new narwhal.common.bus.LocalPlacement.Room(prefill.saturated() || decode.saturated(), (int) starts,
        Math.min(prefill.oldestMs(), decode.oldestMs()));
  }

  /** One phase's room for a model: what its engines' queues take, whether every one is full, its oldest reading. */
  private record PhaseRoom(long starts, boolean saturated, long oldestMs) {
    /** An engine of the phase has no fresh reading, or none serves the model: the phase bounds nothing. */
    static final PhaseRoom UNBOUNDED = new PhaseRoom(Integer.MAX_VALUE, false, Long.MAX_VALUE);
  }

  private PhaseRoom phaseRoom(Phase phase, String model, int queueMax, long now) {
    long room = 0;
    boolean any = false;
    boolean saturated = true;
    long oldest = Long.MAX_VALUE;
    for (Slot s : slots.values()) {
      if (s.state != EngineState.SERVING || !permits(s.engine.role(), phase) || !s.serves(model)) continue;
      EngineLoad r = s.load;
      if (!fresh(r, now)) return PhaseRoom.UNBOUNDED;
      any = true;
      saturated &= Math.min(r.queued(), s.queuedBefore) >= queueMax;
      room += (long) Math.max(0, queueMax - r.queued());
      oldest = Math.min(oldest, r.readAtMs());
    }
    return any ? new PhaseRoom(room, saturated, oldest) : PhaseRoom.UNBOUNDED;
  }

  /** A reading of an engine's load; a newer one restarts the count of legs sent since. */
  synchronized void applyLoad(EngineLoad reading) {
    Slot slot = slots.get(reading.iid());
    if (slot == null || slot.load != null && reading.readAtMs() <= slot.load.readAtMs()) return;
    slot.queuedBefore = slot.load != null && slot.load.ok() ? slot.load.queued() : 0;
    slot.load = reading;
    if (slot.sent > 0 || slot.legSinceReading) sentVersion++;
    slot.sent = 0;
    slot.othersSent = 0;
    slot.legSinceReading = false;
    slot.othersLegs = false;
    slot.ownAtReading = slot.reserved[Phase.PREFILL.ordinal()] + slot.reserved[Phase.DECODE.ordinal()];
  }

  /**
   * Whether a leg went to the engine at or after {@code atMs}: placed by this replica then (by its clock), or counted
   * by another replica against the reading this replica holds (a leg that ended since included).
   */
  synchronized boolean legSince(String iid, long atMs) {
    Slot slot = slots.get(iid);
    return slot != null && (slot.lastLegAtMs >= atMs || slot.othersSent > 0 || slot.othersLegs);
  }

  /** The other replicas' legs sent since each engine's reading, per replica ({@link LegsSent#engines()}). */
  synchronized void applyOthersSent(List<Map<String, LegsSent.Count>> others) {
    for (Slot slot : slots.values()) {
      long sum = 0;
      boolean any = false;
      for (Map<String, LegsSent.Count> other : others) {
        LegsSent.Count count = other.get(slot.engine.iid());
        if (count != null && count.readingMs() == readingMs(slot)) {
          sum += count.sent();
          any = true;
        }
      }
      slot.othersLegs = any;
      // each count is an int of at least 0; their sum saturates (wrapped, it made the engine the idlest of all)
      slot.othersSent = (int) Math.min(Integer.MAX_VALUE, sum);
    }
  }

  /** When the engine's reading this replica holds was taken (0: none yet); {@link Long#MAX_VALUE} for an engine it has not. */
  synchronized long readingMs(String iid) {
    Slot slot = slots.get(iid);
    return slot == null ? Long.MAX_VALUE : readingMs(slot);
  }

  private static long readingMs(Slot slot) {
    return slot.load == null ? 0 : slot.load.readAtMs();
  }

  /** Changes whenever {@link #sentSinceReadings} may have (see {@link #sentVersion}). */
  synchronized long sentVersion() {
    return sentVersion;
  }

  /**
   * This replica's legs sent to each engine since its reading, as the other replicas take them: only the engines it sent
   * legs to since the reading. Leaving the others out keeps the message of an idle replica empty, and unchanged while
   * readings come in (with every engine listed, each new reading changed the message, and 1,000 idle engines made each
   * replica publish all 1,000 counts ten times a second). A count of 0 (its legs there ended) adds nothing to another
   * replica's sum but tells the engine's owner that it got work: its slowed reading is due again.
   */
  synchronized Map<String, LegsSent.Count> sentSinceReadings() {
    Map<String, LegsSent.Count> out = new HashMap<>();
    for (Slot slot : slots.values()) {
      if (slot.sent > 0 || slot.legSinceReading) out.put(slot.engine.iid(), new LegsSent.Count(readingMs(slot), slot.sent));
    }
    return out;
  }

  /** A breaker streak (any replica's): an engine failing below the ejection limit gets less new work. */
  synchronized void applyStreak(String iid, String failureClass, int streak) {
    Slot slot = slots.get(iid);
    if (slot == null) return;
    Integer before = slot.streaks.put(failureClass, Math.max(0, streak));
    if (streak > 0 && (before == null || streak > before)) slot.streakAtMs = clockMs.getAsLong();
    slot.maxStreak = slot.streaks.values().stream().mapToInt(Integer::intValue).max().orElse(0);
  }

  /** Reserves the best engine for {@code phase}, or empty when no engine can take it. */
  public synchronized Optional<Reservation> reserve(Phase phase, Set<String> exclude, String avoid) {
    return reserve(phase, exclude, avoid, null);
  }

  /** As {@link #reserve(Phase, Set, String)}, keeping requests of one {@code affinity} on one producer (cache_aware). */
  public synchronized Optional<Reservation> reserve(Phase phase, Set<String> exclude, String avoid, String affinity) {
    return reserve(phase, exclude, avoid, affinity, null);
  }

  /** As above, among the engines serving {@code model} (null: any engine). */
  public synchronized Optional<Reservation> reserve(Phase phase, Set<String> exclude, String avoid, String affinity, String model) {
    return reserve(phase, exclude, avoid, affinity, model, false);
  }

  /**
   * As above; {@code local}: a decode that runs the whole request (no remote prefill) on a serving {@code both} engine,
   * chosen as the policy chooses a producer (its prefix cache serves the prompt) and recorded with reason {@code local}.
   */
  public synchronized Optional<Reservation> reserve(Phase phase, Set<String> exclude, String avoid, String affinity, String model,
                                                    boolean local) {
    List<Slot> candidates = new ArrayList<>();
    for (Slot slot : slots.values()) {
      if (slot.state == EngineState.SERVING && permits(slot.engine.role(), phase) && !exclude.contains(slot.engine.iid())
          && slot.serves(model) && (!local || slot.engine.role() == Role.BOTH)) {
        candidates.add(slot);
      }
    }
    if (avoid != null && candidates.size() > 1) candidates.removeIf(s -> s.engine.iid().equals(avoid));
    if (candidates.isEmpty()) return Optional.empty();
    Slot chosen;
    String reason;
    boolean cacheAware = affinity != null && (phase == Phase.PREFILL || local) && PlacementConfig.CACHE_AWARE.equals(settings.policy());
    // a prefix's key in the index; null for a session (placed by rendezvous) and for anything not placed by prefix
    String prefix = cacheAware && !affinity.startsWith("session:") ? prefixKey(affinity, model) : null;
    if (candidates.size() == 1) {
      chosen = candidates.get(0);
      reason = "only_candidate";
    } else if (PlacementConfig.LEAST_RESERVED.equals(settings.policy())) {
      chosen = leastReserved(candidates, phase);
      reason = Reservation.LEAST_RESERVED;
    } else {
      double[] scores = scores(candidates, phase);
      // no candidate has a reading: this replica's reservations are the load, and a prefix or session still goes to
      // its producer within the bound (every /metrics failing must not turn cache_aware into least_reserved)
      boolean unread = scores == null;
      if (unread && cacheAware) scores = reservedScores(candidates);
      if (scores == null) {
        chosen = leastReserved(candidates, phase);
        reason = Reservation.LEAST_RESERVED;
      } else if (cacheAware && prefix == null) {
        int index = byAffinity(candidates, scores, affinity);
        chosen = candidates.get(Math.abs(index) - 1);
        // the session's producer is the first in its order of every engine that could take the leg, in service or
        // not: when that one is drained, ejected or excluded, the leg is not where the conversation's blocks are
        boolean home = index > 0 && chosen == sessionProducer(phase, model, local, affinity);
        reason = home ? "session" : unread ? Reservation.LEAST_RESERVED : "spill";
      } else if (prefix != null) {
        List<String> homes = prefixes.homes(prefix);
        int home = byPrefix(candidates, scores, homes);
        if (home >= 0) {
          chosen = candidates.get(home);
          reason = "prefix";
        } else if (unread) {
          chosen = leastReserved(candidates, phase);
          reason = Reservation.LEAST_RESERVED;
        } else if (homes.isEmpty()) {
          // a prefix no replica placed lately: the first of the least loaded producers in its rendezvous order, so
          // replicas that see the same loads put it in the same place before any gossip says where it went
          chosen = firstOfLeast(candidates, scores, prefix);
          reason = NEW_PREFIX;
        } else {
          chosen = lowest(candidates, scores, phase);
          reason = "spill";
        }
      } else {
        chosen = lowest(candidates, scores, phase);
        reason = "load";
      }
    }
    if (prefix != null) prefixes.placed(prefix, chosen.engine.iid());
    chosen.reserved[phase.ordinal()]++;
    chosen.sent++;
    chosen.legSinceReading = true;
    sentVersion++;
    chosen.lastLegAtMs = clockMs.getAsLong();
    if (local) reason = Reservation.LOCAL;
    Reservation reservation = new Reservation("r" + (++nextId), chosen.engine.iid(), chosen.engine.url(), phase, reason);
    reservations.put(reservation.id(), reservation);
    madeAgainst.put(reservation.id(), chosen.load == null ? 0L : chosen.load.readAtMs());
    return Optional.of(reservation);
  }

  /**
   * A prefix's key in the index: its affinity and the model (or adapter) the request names. Each model computes its
   * own blocks of a shared system prompt (vLLM keys its prefix cache by adapter too), so the producers that cached
   * it for one model are no home of it for another, and do not push that model's homes out.
   */
  private static String prefixKey(String affinity, String model) {
    return model == null ? affinity : affinity + "@" + model;
  }

  /**
   * The index among {@code candidates} of the newest of a prefix's {@code homes} whose load is at most
   * {@code load_factor} × the mean load + 1, or -1: no home is a candidate within the bound (the prefix spills, by load).
   */
  private int byPrefix(List<Slot> candidates, double[] scores, List<String> homes) {
    if (homes.isEmpty()) return -1;
    double bound = bound(scores);
    for (String iid : homes) {
      for (int i = 0; i < candidates.size(); i++) {
        if (candidates.get(i).engine.iid().equals(iid)) {
          if (scores[i] <= bound) return i;
          break;
        }
      }
    }
    return -1;
  }

  private double bound(double[] scores) {
    double mean = 0;
    for (double v : scores) mean += v;
    return settings.loadFactor() * mean / scores.length + 1;
  }

  /**
   * This replica's prefix placements since the last call, for the other replicas, with the url of each engine named
   * (read under the same lock as the placements: a reload that re-points an engine forgets what was queued for it).
   */
  synchronized PrefixesPlaced drainPrefixes(String origin) {
    Map<String, String> placed = prefixes.drain();
    // the exchange's tick every 50 ms with nothing placed builds nothing more
    if (placed.isEmpty()) return new PrefixesPlaced(origin, placed, Map.of());
    Map<String, String> urls = new HashMap<>();
    for (String iid : placed.values()) {
      Slot slot = slots.get(iid);
      if (slot != null) urls.putIfAbsent(iid, slot.engine.url());
    }
    return new PrefixesPlaced(origin, placed, urls);
  }

  /**
   * Another replica's prefix placements: where each prefix's blocks are now cached. An entry naming an engine this
   * replica does not have, or has at another url than the sender placed on (one of the two has not re-read a
   * re-pointed engine yet), is not learned: the engine here holds none of those blocks.
   */
  synchronized void learnPrefixes(PrefixesPlaced message) {
    message.placed().forEach((affinity, iid) -> {
      Slot slot = slots.get(iid);
      if (slot != null && slot.engine.url().equals(message.urls().get(iid))) prefixes.learned(affinity, iid);
    });
  }

  /** The prefix index for a peer that asks ({@link PrefixSnapshot}), least recently used first, with each named engine's url. */
  synchronized PrefixSnapshot prefixSnapshot(String origin) {
    List<String[]> entries = prefixes.entries();
    List<List<String>> out = new ArrayList<>(entries.size());
    Map<String, String> urls = new HashMap<>();
    for (String[] entry : entries) {
      out.add(List.of(entry));
      for (int i = 1; i < entry.length; i++) {
        Slot slot = slots.get(entry[i]);
        if (slot != null) urls.putIfAbsent(entry[i], slot.engine.url());
      }
    }
    return new PrefixSnapshot(origin, out, urls, false);
  }

  /**
   * A chunk of a peer's index, learned under the rule of {@link #learnPrefixes}: a home this replica does not have at the
   * url the peer has it at is left out (the other home keeps its place); a prefix this replica knows keeps its homes.
   * How many prefixes it learned.
   */
  synchronized int learnSnapshot(PrefixSnapshot chunk) {
    int learned = 0;
    for (List<String> entry : chunk.prefixes()) {
      List<String> homes = new ArrayList<>(entry.size() - 1);
      for (String iid : entry.subList(1, entry.size())) {
        Slot slot = slots.get(iid);
        if (slot != null && slot.engine.url().equals(chunk.urls().get(iid))) homes.add(iid);
      }
      if (prefixes.fill(entry.get(0), homes)) learned++;
    }
    return learned;
  }

  /** How many prefixes the index knows a producer of. */
  synchronized int knownPrefixes() {
    return prefixes.size();
  }

  /** Each candidate's legs of this replica now: the load when no candidate has a reading. */
  private static double[] reservedScores(List<Slot> candidates) {
    double[] scores = new double[candidates.size()];
    for (int i = 0; i < scores.length; i++) {
      Slot s = candidates.get(i);
      scores[i] = s.reserved[Phase.PREFILL.ordinal()] + s.reserved[Phase.DECODE.ordinal()];
    }
    return scores;
  }

  private Slot leastReserved(List<Slot> candidates, Phase phase) {
    int least = Integer.MAX_VALUE;
    for (Slot s : candidates) least = Math.min(least, s.reserved[phase.ordinal()]);
    List<Slot> tied = new ArrayList<>();
    for (Slot s : candidates) if (s.reserved[phase.ordinal()] == least) tied.add(s);
    int turn = rotation.merge(phase, 1, Integer::sum);
    return tied.get(Math.floorMod(turn - 1, tied.size()));
  }

  /**
   * Each candidate's load: this replica's legs on it now (exact: they are its own reservations) plus the other
   * replicas' share of its reading (running + waiting requests, less this replica's legs when it was read: its own
   * legs, running or queued there, count once, as reservations) and the
   * legs they sent since (for a decode, scaled up by the KV cache's fill), weighted up by its failure streak. A reading
   * is up to an interval old: its own legs that ended since are no load, so they are not taken from it. A candidate
   * without a fresh reading counts as one more than the busiest reading, plus this replica's legs on it and the legs the
   * other replicas sent since: never idle, still used as the others fill. Null when no candidate has a reading (then reservations decide, as the load a prefix or a
   * session is bounded by under {@code cache_aware}).
   */
  private double[] scores(List<Slot> candidates, Phase phase) {
    long now = clockMs.getAsLong();
    double[] scores = new double[candidates.size()];
    double busiest = -1;
    for (int i = 0; i < scores.length; i++) {
      Slot s = candidates.get(i);
      EngineLoad r = s.load;
      if (!fresh(r, now)) {
        scores[i] = Double.NaN;
        continue;
      }
      double others = Math.max(0, r.running() + r.waiting() - s.ownAtReading);
      busiest = Math.max(busiest, others);
      double queue = others + s.reserved[Phase.PREFILL.ordinal()] + s.reserved[Phase.DECODE.ordinal()] + s.othersSent;
      scores[i] = phase == Phase.DECODE ? queue * (1 + r.kvUsage()) : queue;
    }
    if (busiest < 0) return null;
    for (int i = 0; i < scores.length; i++) {
      Slot s = candidates.get(i);
      // this replica's legs on it count whole, as on a read engine: a failed reading restarts the count of legs sent
      // since, and counting only those made an engine whose /metrics keeps failing look idle each interval
      if (Double.isNaN(scores[i])) {
        scores[i] = busiest + 1 + s.reserved[Phase.PREFILL.ordinal()] + s.reserved[Phase.DECODE.ordinal()] + s.othersSent;
      }
      double streak = streakWeight(s, now);
      if (streak > 0) scores[i] = (scores[i] + 1) * (1 + 2.0 * streak / ejectAfter) - 1;
    }
    return scores;
  }

  /**
   * Whether {@code r} is a reading placement goes by at {@code now}: one that did not fail, at most two intervals older
   * than the engine's cadence when it was read (the configured interval; an idle engine's slower one). Three configured
   * intervals for every reading made an idle engine, read every 2 to 8 intervals, unknown — busier than the busiest —
   * for most of its slower interval: placement sent nothing to the fleet's idle engines between their readings.
   */
  private boolean fresh(EngineLoad r, long now) {
    return r != null && r.ok() && now - r.readAtMs() <= settings.readingIntervalMs(r.idleReadings()) + 2 * settings.metricsIntervalMs();
  }

  /**
   * A failure streak's weight now: the streak as it grew, less and less over {@link #STREAK_FORGET_MS}, then nothing.
   * At low traffic an engine weighed down by one failure may get no request that could succeed and reset its streak;
   * time lets it back in.
   */
  private static double streakWeight(Slot s, long now) {
    if (s.maxStreak <= 0) return 0;
    double left = 1 - (double) Math.max(0, now - s.streakAtMs) / STREAK_FORGET_MS;
    return left <= 0 ? 0 : s.maxStreak * left;
  }

  private Slot lowest(List<Slot> candidates, double[] scores, Phase phase) {
    double best = Double.MAX_VALUE;
    for (double v : scores) best = Math.min(best, v);
    List<Slot> tied = new ArrayList<>();
    for (int i = 0; i < scores.length; i++) if (scores[i] <= best) tied.add(candidates.get(i));
    if (tied.size() == 1) return tied.get(0);
    return leastReserved(tied, phase);
  }

  /**
   * The first candidate, in the affinity's rendezvous order (the same order on every replica), whose load is at most
   * {@code load_factor} × the mean load + 1: its index + 1, negated when it is not the first in the order (a spill).
   */
  private int byAffinity(List<Slot> candidates, double[] scores, String affinity) {
    long key = Rendezvous.hash(affinity);
    double bound = bound(scores);
    int first = -1;
    int within = -1;
    long firstWeight = 0;
    long withinWeight = 0;
    for (int i = 0; i < scores.length; i++) {
      long weight = Rendezvous.weight(key, candidates.get(i).hash);
      if (first < 0 || Long.compareUnsigned(weight, firstWeight) > 0) {
        first = i;
        firstWeight = weight;
      }
      if (scores[i] <= bound && (within < 0 || Long.compareUnsigned(weight, withinWeight) > 0)) {
        within = i;
        withinWeight = weight;
      }
    }
    if (within == first) return first + 1;
    return within < 0 ? -(first + 1) : -(within + 1);
  }

  /**
   * The first of the least loaded candidates in {@code affinity}'s rendezvous order. Not the first within the load
   * bound: a prompt placed one leg above the least loaded producer waits a whole prefill for it, every time, while two
   * replicas disagreeing on a new prefix cost at most one more miss; by the least loaded, prompts that share nothing
   * spread as by load (the bound let them pile up to 1.69x least_reserved's TTFT in the placement benchmark), and
   * replicas whose views agree on the least loaded (an idle fleet: all of them) still agree on the producer.
   */
  private static Slot firstOfLeast(List<Slot> candidates, double[] scores, String affinity) {
    double least = Double.MAX_VALUE;
    for (double v : scores) least = Math.min(least, v);
    long key = Rendezvous.hash(affinity);
    Slot first = null;
    long firstWeight = 0;
    for (int i = 0; i < scores.length; i++) {
      if (scores[i] > least) continue;
      long weight = Rendezvous.weight(key, candidates.get(i).hash);
      if (first == null || Long.compareUnsigned(weight, firstWeight) > 0) {
        first = candidates.get(i);
        firstWeight = weight;
      }
    }
    return first;
  }

  /** The first engine in {@code affinity}'s rendezvous order of those whose role and model could take the leg, in service or not. */
  private Slot sessionProducer(Phase phase, String model, boolean local, String affinity) {
    long key = Rendezvous.hash(affinity);
    Slot first = null;
    long firstWeight = 0;
    for (Slot slot : slots.values()) {
      if (!permits(slot.engine.role(), phase) || !slot.serves(model) || local && slot.engine.role() != Role.BOTH) continue;
      long weight = Rendezvous.weight(key, slot.hash);
      if (first == null || Long.compareUnsigned(weight, firstWeight) > 0) {
        first = slot;
        firstWeight = weight;
      }
    }
    return first;
  }

  /** Releases a reservation; releasing an unknown or already released id changes nothing. */
  public synchronized boolean release(String id) {
    Reservation reservation = reservations.remove(id);
    Long against = madeAgainst.remove(id);
    if (reservation == null) return false;
    Slot slot = slots.get(reservation.iid());
    if (slot == null) slot = retired.get(reservation.iid());
    if (slot != null) {
      slot.reserved[reservation.phase().ordinal()]--;
      if (slot.sent > 0 && against != null && against == (slot.load == null ? 0L : slot.load.readAtMs())) {
        slot.sent--;
        sentVersion++;
      }
      if (!slots.containsKey(reservation.iid()) && !holds(slot)) retired.remove(reservation.iid());
    }
    return true;
  }

  private static boolean holds(Slot slot) {
    for (int n : slot.reserved) if (n > 0) return true;
    return false;
  }

  public synchronized int reserved(String iid, Phase phase) {
    Slot slot = slots.get(iid);
    return slot == null ? 0 : slot.reserved[phase.ordinal()];
  }

  public synchronized int totalReservations() {
    return reservations.size();
  }

  /** Whether some serving engine could take each phase now. */
  public synchronized Optional<String> unplaceablePhase() {
    return unplaceablePhase(null);
  }

  /** The first phase no serving engine of {@code model} (null: any engine) could take now, or empty. */
  public synchronized Optional<String> unplaceablePhase(String model) {
    for (Phase phase : Phase.values()) {
      if (!covers(phase, model)) return Optional.of(phase.wireName());
    }
    return Optional.empty();
  }

  /** Whether some serving engine could take {@code phase} now. */
  public synchronized boolean covers(Phase phase) {
    return covers(phase, null);
  }

  /** Whether some serving engine of {@code model} (null: any) could take {@code phase} now. */
  public synchronized boolean covers(Phase phase, String model) {
    return slots.values().stream().anyMatch(s -> s.state == EngineState.SERVING && permits(s.engine.role(), phase) && s.serves(model));
  }

  /** Whether some engine of the fleet, serving or not, serves {@code model}. */
  public synchronized boolean knows(String model) {
    return slots.values().stream().anyMatch(s -> s.serves(model));
  }

  /** The models the engines are configured with, in the order of the engines. */
  public synchronized List<String> models() {
    java.util.LinkedHashSet<String> models = new java.util.LinkedHashSet<>();
    slots.values().forEach(s -> models.add(s.engine.model()));
    return List.copyOf(models);
  }

  /** An engine's {@code /v1/models} listing: the model cards it serves (its names and LoRA adapters). */
  public synchronized void applyListing(String iid, List<io.vertx.core.json.JsonObject> cards) {
    Slot slot = slots.get(iid);
    if (slot == null) return;
    Map<String, io.vertx.core.json.JsonObject> listed = new LinkedHashMap<>();
    for (io.vertx.core.json.JsonObject card : cards) {
      if (card.getValue("id") instanceof String id && !id.isEmpty()) listed.putIfAbsent(id, card.copy());
    }
    slot.listed = listed;
  }

  /**
   * Drops {@code model} from engine {@code iid}'s listing: the engine answered that it does not serve it (an adapter
   * unloaded since the listing was read). The next {@code /v1/models} reading of the engine replaces the listing.
   */
  public synchronized void unlist(String iid, String model) {
    Slot slot = slots.get(iid);
    if (slot == null || slot.listed == null || model == null || !slot.listed.containsKey(model)) return;
    Map<String, io.vertx.core.json.JsonObject> listed = new LinkedHashMap<>(slot.listed);
    listed.remove(model);
    slot.listed = listed;
  }

  /** The model cards serving engines listed, each id once (the first engine's card), in the order of the engines. */
  public synchronized List<io.vertx.core.json.JsonObject> servedCards() {
    Map<String, io.vertx.core.json.JsonObject> union = new LinkedHashMap<>();
    for (Slot s : slots.values()) {
      if (s.state != EngineState.SERVING || s.listed == null) continue;
      s.listed.forEach((id, card) -> union.putIfAbsent(id, card.copy()));
    }
    return List.copyOf(union.values());
  }

  /** The engine's last reading, or null. */
  synchronized EngineLoad load(String iid) {
    Slot slot = slots.get(iid);
    return slot == null ? null : slot.load;
  }

  public synchronized List<EngineView> view() {
    List<EngineView> out = new ArrayList<>();
    for (Slot s : slots.values()) {
      out.add(new EngineView(s.engine.iid(), s.engine.role(), s.state, s.reserved[Phase.PREFILL.ordinal()],
          s.reserved[Phase.DECODE.ordinal()], s.load, (int) Math.min(Integer.MAX_VALUE, (long) s.sent + s.othersSent), s.engine.model()));
    }
    return out;
  }

  /** One engine's line in a placement snapshot: its last load reading (null: none yet) and the cluster's legs since. */
  public record EngineView(String iid, Role role, EngineState state, int prefillReserved, int decodeReserved,
                           EngineLoad load, int sentSinceReading, String model) {
    public EngineView(String iid, Role role, EngineState state, int prefillReserved, int decodeReserved) {
      this(iid, role, state, prefillReserved, decodeReserved, null, 0, "");
    }
  }

  static boolean permits(Role role, Phase phase) {
    return phase == Phase.PREFILL ? role.canPrefill() : role.canDecode();
  }
}
