package narwhal.placement;

import narwhal.common.bus.EngineState;
import narwhal.common.bus.Reservation;
import narwhal.common.config.EngineConfig;
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
 * Which engine takes a phase of a request, and how many reservations each engine holds per phase. Least
 * reserved wins, ties rotate; only serving engines whose role permits the phase are candidates; an engine
 * to avoid is passed over whenever another candidate exists. Thread-safe: the verticle updates it, routers on any
 * event loop of the node reserve and release through it.
 */
final class PlacementTable {
  private final Map<String, Slot> slots = new LinkedHashMap<>();
  private final Map<String, Reservation> reservations = new HashMap<>();
  private final Map<Phase, Integer> rotation = new HashMap<>();
  private long nextId;

  /** An engine as placement sees it. */
  private static final class Slot {
    EngineConfig engine;
    EngineState state = EngineState.SERVING;
    final int[] reserved = new int[Phase.values().length];

    Slot(EngineConfig engine) {
      this.engine = engine;
    }
  }

  public PlacementTable(List<EngineConfig> engines) {
    setEngines(engines);
  }

  /** Replaces the engine list; engines that stay keep their state and reservations, removed ones keep theirs until released. */
  public synchronized void setEngines(List<EngineConfig> engines) {
    Map<String, Slot> kept = new LinkedHashMap<>();
    for (EngineConfig engine : engines) {
      Slot slot = slots.getOrDefault(engine.iid(), new Slot(engine));
      slot.engine = engine;
      kept.put(engine.iid(), slot);
    }
    slots.clear();
    slots.putAll(kept);
  }

  public synchronized void setState(String iid, EngineState state) {
    Slot slot = slots.get(iid);
    if (slot != null) slot.state = state;
  }

  public synchronized Optional<EngineState> state(String iid) {
    Slot slot = slots.get(iid);
    return slot == null ? Optional.empty() : Optional.of(slot.state);
  }

  /** Reserves the best engine for {@code phase}, or empty when no engine can take it. */
  public synchronized Optional<Reservation> reserve(Phase phase, Set<String> exclude, String avoid) {
    List<Slot> candidates = new ArrayList<>();
    for (Slot slot : slots.values()) {
      if (slot.state == EngineState.SERVING && permits(slot.engine.role(), phase) && !exclude.contains(slot.engine.iid())) {
        candidates.add(slot);
      }
    }
    if (avoid != null && candidates.size() > 1) candidates.removeIf(s -> s.engine.iid().equals(avoid));
    if (candidates.isEmpty()) return Optional.empty();
    int least = Integer.MAX_VALUE;
    for (Slot s : candidates) least = Math.min(least, s.reserved[phase.ordinal()]);
    List<Slot> tied = new ArrayList<>();
    for (Slot s : candidates) if (s.reserved[phase.ordinal()] == least) tied.add(s);
    int turn = rotation.merge(phase, 1, Integer::sum);
    Slot chosen = tied.get(Math.floorMod(turn - 1, tied.size()));
    chosen.reserved[phase.ordinal()]++;
    Reservation reservation = new Reservation("r" + (++nextId), chosen.engine.iid(), chosen.engine.url(), phase);
    reservations.put(reservation.id(), reservation);
    return Optional.of(reservation);
  }

  /** Releases a reservation; releasing an unknown or already released id changes nothing. */
  public synchronized boolean release(String id) {
    Reservation reservation = reservations.remove(id);
    if (reservation == null) return false;
    Slot slot = slots.get(reservation.iid());
    if (slot != null) slot.reserved[reservation.phase().ordinal()]--;
    return true;
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
    for (Phase phase : Phase.values()) {
      if (!covers(phase)) return Optional.of(phase.wireName());
    }
    return Optional.empty();
  }

  /** Whether some serving engine could take {@code phase} now. */
  public synchronized boolean covers(Phase phase) {
    return slots.values().stream().anyMatch(s -> s.state == EngineState.SERVING && permits(s.engine.role(), phase));
  }

  public synchronized List<EngineView> view() {
    List<EngineView> out = new ArrayList<>();
    for (Slot s : slots.values()) {
      out.add(new EngineView(s.engine.iid(), s.engine.role(), s.state, s.reserved[Phase.PREFILL.ordinal()], s.reserved[Phase.DECODE.ordinal()]));
    }
    return out;
  }

  /** One engine's line in a placement snapshot. */
  public record EngineView(String iid, Role role, EngineState state, int prefillReserved, int decodeReserved) {
  }

  static boolean permits(Role role, Phase phase) {
    return phase == Phase.PREFILL ? role.canPrefill() : role.canDecode();
  }
}
