package narwhal.router;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import narwhal.common.bus.LocalPlacement;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which inference requests a replica admits: the in-flight requests under {@code serving.max_in_flight} (one count
 * across endpoints and event loops), and the stop sequence (docs/configuration.md {@code serving.drain_delay_s}). A request
 * counts from its admission to its lifecycle's terminal outcome, whatever reservations it holds between its legs.
 * Draining: readiness is false but requests are still admitted, so the balancer's health check takes the replica
 * out first. Closed: new requests are refused as {@code shutting_down}; {@link #idle} completes when the last
 * request in flight has ended; {@link #cutAll} ends those still running when the graceful timeout is over. Thread-safe:
 * the count and the closed flag are one atomic word.
 * <p>An admitted request's attempts then take {@link LegTurn}s: at most {@code serving.max_legs_in_flight} attempts of
 * the replica (every prompt of a batch is one) run legs against engines at once, the others wait in arrival order
 * before their prefill (or their one leg) is sent, so a waiting prompt holds no KV on any engine. They also wait while
 * the engines of their model have no room ({@code flow.engine_queue_max}, {@link #onEngineRoom}): then an attempt
 * starts only in place of one of the model's that ended here, so the engines' queues stop growing and the rest waits
 * in the router's fair order; a re-check every {@link #RECHECK_MS} lets as many go as a reading says the engines take.
 * {@code flow.reserved_for_high} of the legs are the highest class's only: its attempts find one free under a flood of
 * the others. {@code flow.prefill_legs_max} bounds the prefills this replica runs at once on one producer: an attempt
 * whose producer runs that many waits, in the same order, for one of them to end ({@link LegTurn#prefillEnded}).
 */
final class Admission {
  /** What {@link #admit} decided. */
  enum Verdict { ADMITTED, OVERLOADED, SHUTTING_DOWN }

  private static final int CLOSED = 1 << 30;
  private final AtomicInteger state = new AtomicInteger();
  private final Promise<Void> idle = Promise.promise();
  private final Set<Cuttable> running = ConcurrentHashMap.newKeySet();
  private volatile boolean draining;

  /** An admitted request that the end of a graceful stop can end with its terminal outcome ({@link #cutAll}). */
  interface Cuttable {
    /** Ends the request as cut by the stop; called from any thread, idempotent. */
    void cut();
  }

  private final FairQueue<LegTurn> legQueue = new FairQueue<>(narwhal.common.config.TenantConfig.CLASSES.size());
  /** Guarded by {@link #legQueue}. */
  private int legsRunning;
  /** Guarded by {@link #legQueue}: per request (its lane), its attempts waiting or running, so a batch is one request. */
  private final java.util.IdentityHashMap<Lane, Integer> holdsTurns = new java.util.IdentityHashMap<>();
  /** Told how long each granted turn waited, by its lane ({@code narwhal_flow_wait_seconds}). */
  private volatile java.util.function.BiConsumer<Lane, Long> waits = (lane, nanos) -> { };
  private final TenantQuotas quotas;
  /** How many more attempts of a model its engines' queues take now (their last readings); null: no bound. */
  private volatile java.util.function.Function<String, LocalPlacement.Room> rooms = model -> null;
  /**
   * Guarded by {@link #legQueue}: per saturated model, the attempts of it that ended here since it was found
   * saturated and were not yet replaced (each lets one waiting attempt of the model start in its place).
   */
  private final java.util.Map<String, Integer> credits = new java.util.HashMap<>();
  /** Guarded by {@link #legQueue}: per bounded model, when its attempts started (this clock), oldest first. */
  private final java.util.Map<String, java.util.ArrayDeque<Long>> startedAt = new java.util.HashMap<>();
  /** The clock of {@link #startedAt}: epoch ms, as the engines' readings are stamped. */
  private final java.util.function.LongSupplier clockMs;
  /** Guarded by {@link #legQueue}: the models whose attempts the engines' room bounds now ({@link Saturation}). */
  private final Set<String> bounded = new java.util.HashSet<>();
  /** Guarded by {@link #legQueue}: per model, its attempts waiting in the queue. */
  private final java.util.Map<String, Integer> waitingByModel = new java.util.HashMap<>();
  /** Guarded by {@link #legQueue}: the limit the last turn asked under, and whether a re-check is scheduled. */
  private int lastLimit = 1;
  private boolean recheckScheduled;
  /** {@code flow.prefill_legs_max}: prefill legs at once per producer engine (0: no bound). */
  private volatile java.util.function.IntSupplier prefillLegsMax = () -> 0;
  /** Guarded by {@link #legQueue}: per producer engine, the prefill legs of running turns not yet ended. */
  private final java.util.Map<String, Integer> prefilling = new java.util.HashMap<>();
  /** {@code flow.burst}: attempts a tenant under its share may start ahead of a backlog of its class. */
  private volatile java.util.function.IntSupplier burst = () -> 0;
  /** How many of {@code serving.max_legs_in_flight} only the highest class's attempts take ({@code flow.reserved_for_high}). */
  private volatile java.util.function.IntSupplier reservedForHigh = () -> 0;
  /** How often attempts held by their engines' saturation are looked at again while they wait. */
  static final long RECHECK_MS = 100;

  Admission() {
    this(System::currentTimeMillis);
  }

  /** {@code clockMs}: the quotas' clock. */
  Admission(java.util.function.LongSupplier clockMs) {
    this.quotas = new TenantQuotas(clockMs);
    this.clockMs = clockMs;
  }

  /** Each tenant's quotas, counted across the cluster. */
  TenantQuotas quotas() {
    return quotas;
  }

  /** Where each granted turn's wait goes (the replica's metrics). */
  void onWait(java.util.function.BiConsumer<Lane, Long> waits) {
    this.waits = waits;
  }

  /**
   * Where the engines' room is read from: how many more attempts of a model their queues take under
   * {@code flow.engine_queue_max} (placement's readings, {@link LocalPlacement#room}); null: no bound.
   */
  void onEngineRoom(java.util.function.Function<String, LocalPlacement.Room> rooms) {
    this.rooms = rooms;
  }

  /** Where {@code flow.prefill_legs_max} is read from (each decision reads it: a reload applies at once). */
  void onPrefillLegsMax(java.util.function.IntSupplier prefillLegsMax) {
    this.prefillLegsMax = prefillLegsMax;
  }

  /** Where {@code flow.burst} is read from (each attempt queued reads it: a reload applies at once). */
  void onBurst(java.util.function.IntSupplier burst) {
    this.burst = burst;
  }

  /** Where {@code flow.reserved_for_high} is read from (each decision reads it: a reload applies at once). */
  void onReservedForHigh(java.util.function.IntSupplier reservedForHigh) {
    this.reservedForHigh = reservedForHigh;
  }

  /**
   * The legs an attempt of class {@code rank} may find running and still start: {@code limit} for the highest class,
   * less the reserve for the others (at least one is left to them).
   */
  private int limitFor(int rank, int limit) {
    return rank == 0 ? limit : Math.max(1, limit - Math.max(0, reservedForHigh.getAsInt()));
  }

  /** Counts the request in when the replica is open and under {@code limit}. */
  Verdict admit(int limit) {
    int before = state.getAndUpdate(n -> (n & CLOSED) != 0 || n >= limit ? n : n + 1);
    if ((before & CLOSED) != 0) return Verdict.SHUTTING_DOWN;
    return before >= limit ? Verdict.OVERLOADED : Verdict.ADMITTED;
  }

  /** An admitted request of {@code lane}'s tenant has reached its terminal outcome. */
  void finished(Lane lane) {
    quotas.ended(lane.tenant());
    finished();
  }

  /** An admitted request has reached its terminal outcome (or was refused by its quotas right after admission). */
  void finished() {
    if (state.decrementAndGet() == CLOSED) idle.tryComplete();
  }

  /** {@code request} runs until {@link #untrack}: a stop past its graceful timeout cuts it. */
  void track(Cuttable request) {
    running.add(request);
  }

  void untrack(Cuttable request) {
    running.remove(request);
  }

  /** The graceful timeout is over: every request still running ends now, with its journal row; returns how many. */
  int cutAll() {
    int n = 0;
    for (Cuttable request : running) {
      request.cut();
      n++;
    }
    return n;
  }

  /** Readiness turns false; requests are still admitted. */
  void drain() {
    draining = true;
  }

  boolean draining() {
    return draining;
  }

  /** From now on new requests are refused; returns how many are in flight. Also drains. */
  int close() {
    draining = true;
    int before = state.getAndUpdate(n -> n | CLOSED);
    if ((before & ~CLOSED) == 0) idle.tryComplete();
    return before & ~CLOSED;
  }

  boolean closed() {
    return (state.get() & CLOSED) != 0;
  }

  /** Requests admitted and not yet ended. */
  int inFlight() {
    return state.get() & ~CLOSED;
  }

  /** Completes once the replica is closed and no request is in flight. */
  Future<Void> idle() {
    return idle.future();
  }

  /**
   * Why an attempt got no turn: it waited {@code flow.queue_timeout_s} ({@code timedOut}), or the queue was full and it
   * was the one shed ({@link FairQueue#shedFor}). The request ends with 429 ({@link EdgeError#queueRefused}).
   */
  static final class QueueRefused extends RuntimeException {
    final boolean timedOut;

    QueueRefused(boolean timedOut) {
      super(timedOut ? "waited flow.queue_timeout_s for a turn" : "flow.max_queued attempts were waiting", null, false, false);
      this.timedOut = timedOut;
    }
  }

  /**
   * Who a request's attempts wait as: its tenant (class, weight, quotas) and what one of its prompts costs, estimated
   * before any engine counted it: a quarter of its body's bytes (about its prompt's tokens) plus the tokens it asks for
   * ({@code max_tokens}, {@code max_completion_tokens}, {@code max_output_tokens}, the largest of those it names; 16
   * when it names none).
   */
  record Lane(narwhal.common.config.TenantConfig tenant, double cost, long promptTokens) {
    static final Lane DEFAULT = new Lane(narwhal.common.config.TenantConfig.fallback(narwhal.common.config.TenantsConfig.FALLBACK), 1);

    Lane(narwhal.common.config.TenantConfig tenant, double cost) {
      this(tenant, cost, 0);
    }

    /** {@code promptTokens}: a quarter of one prompt's share of the body's bytes, what a leg the client left is charged. */
    static Lane of(narwhal.common.config.TenantConfig tenant, long bodyBytes, int prompts, io.vertx.core.json.JsonObject body) {
      // the largest limit named: an engine reads the one its endpoint knows (completions: max_tokens) and ignores the others
      long asked = 0;
      for (String field : List.of("max_tokens", "max_completion_tokens", "max_output_tokens")) {
        // as vLLM reads it (pydantic's lax integers: "10000" is 10,000 tokens too)
        Long n = LaxNumbers.integer(body.getValue(field));
        if (n != null && n > 0) asked = Math.max(asked, Math.min(n, 10_000_000L));
      }
      if (asked == 0) asked = 16;
      long prompt = Math.max(0, bodyBytes) / 4 / Math.max(1, prompts);
      return new Lane(tenant, 1 + prompt + asked, prompt);
    }
  }

  /**
   * One attempt's turn to run legs, waiting from {@link #legTurn} until {@link #granted}, held until {@link #release}.
   * Its states change under the admission's lock; its grant completes on the context that asked for it.
   */
  final class LegTurn {
    private static final int WAITING = 0;
    private static final int RUNNING = 1;
    private static final int DONE = 2;
    private final Context context;
    private final Promise<Void> granted = Promise.promise();
    private final long queuedNanos = System.nanoTime();
    private final Lane lane;
    /** The model its engines serve (null: never held by saturation). */
    private final String model;
    /** The producer its prefill leg goes to (null: the attempt has no prefill leg of its own). */
    private final String producer;
    /** Its prefill counts against {@link #producer}'s {@code flow.prefill_legs_max} until it ends. */
    private boolean prefillCounted;
    private FairQueue.Entry<LegTurn> entry;
    private int state = WAITING;
    private long timer = -1;
    /** Granted as it asked (nothing was waiting and a leg was free): its wait is not recorded. */
    private boolean immediate;
    /** How long it waited for its turn, once granted (0 when granted as it asked). */
    private volatile long waitedNanos;

    private LegTurn(Context context, Lane lane, String model, String producer) {
      this.context = context;
      this.lane = lane;
      this.model = model;
      this.producer = producer;
    }

    /** How long it waited for its turn: 0 until granted, and when granted as it asked. */
    long waitedNanos() {
      return waitedNanos;
    }

    /** Completes when this attempt may send its legs; fails when it was released before its turn came. */
    Future<Void> granted() {
      return granted.future();
    }

    /**
     * The attempt ended (or no longer waits): its turn passes to the next waiting one, under {@code limit} as now
     * configured. Idempotent.
     */
    void release(int limit) {
      releaseTurn(this, limit, new CancellationException("released before its turn"), false);
    }

    /** Its prefill leg ended (answered or failed): the producer takes the next waiting one. Idempotent. */
    void prefillEnded() {
      List<LegTurn> go;
      synchronized (legQueue) {
        if (!prefillCounted) return;
        unprefill(this);
        go = grantTurns(lastLimit, new Saturation());
      }
      go.forEach(Admission.this::grant);
    }
  }

  /**
   * A turn for an attempt of an admitted request, granted at once while fewer than {@code limit} legs run and nothing
   * waits; else it waits in the {@link FairQueue} for at most {@code timeoutMs}, among at most {@code maxQueued}.
   */
  LegTurn legTurn(int limit, Context context, Lane lane, long timeoutMs, int maxQueued) {
    return legTurn(limit, context, lane, null, timeoutMs, maxQueued);
  }

  /** As above, for an attempt on engines serving {@code model}: it also waits while they are saturated. */
  LegTurn legTurn(int limit, Context context, Lane lane, String model, long timeoutMs, int maxQueued) {
    return legTurn(limit, context, lane, model, null, timeoutMs, maxQueued);
  }

  /** As above, for an attempt whose prefill goes to {@code producer}: it also waits while that one runs enough prefills. */
  LegTurn legTurn(int limit, Context context, Lane lane, String model, String producer, long timeoutMs, int maxQueued) {
    LegTurn turn = new LegTurn(context, lane, model, producer);
    List<LegTurn> go;
    LegTurn shed = null;
    boolean refused = false;
    boolean recheck;
    Saturation now = new Saturation();
    synchronized (legQueue) {
      lastLimit = limit;
      // the bound is on requests waiting: a prompt of a batch that already holds a turn waits behind its own
      // the queue's bound holds for every attempt that would wait, whether legs or its engines' room hold it
      boolean wouldWait = legsRunning >= limitFor(lane.tenant().rank(), limit) || !mayStart(turn, now);
      if (legQueue.size() >= maxQueued && wouldWait && !holdsTurns.containsKey(lane)) {
        FairQueue.Entry<LegTurn> dropped = legQueue.shedFor(lane.tenant().name());
        if (dropped == null) {
          refused = true;
        } else {
          shed = dropped.item;
          unwait(shed);
          done(shed);
        }
      }
      if (!refused) holdsTurns.merge(lane, 1, Integer::sum);
      if (refused) {
        turn.state = LegTurn.DONE;
        go = grantTurns(limit, now);
      } else if (legQueue.isEmpty() && legsRunning < limitFor(lane.tenant().rank(), limit) && mayStart(turn, now)) {
        // nothing waits and a leg is free: the turn runs at once, the queue untouched
        started(turn, now);
        turn.state = LegTurn.RUNNING;
        turn.immediate = true;
        legsRunning++;
        go = List.of(turn);
      } else {
        turn.entry = legQueue.add(turn, lane.tenant().rank(), lane.tenant().name(), lane.tenant().weight(), lane.cost(),
            burst.getAsInt());
        if (model != null) waitingByModel.merge(model, 1, Integer::sum);
        go = grantTurns(limit, now);
      }
      recheck = scheduleRecheck();
    }
    if (recheck) context.owner().setTimer(RECHECK_MS, t -> recheck(context.owner()));
    if (refused) {
      context.runOnContext(v -> turn.granted.tryFail(new QueueRefused(false)));
    } else if (turn.state == LegTurn.WAITING) {
      long ms = Math.max(1, timeoutMs);
      context.runOnContext(v -> {
        if (!turn.granted.future().isComplete()) {
          turn.timer = context.owner().setTimer(ms, t -> releaseTurn(turn, limit, new QueueRefused(true), true));
        }
      });
    }
    if (shed != null) {
      LegTurn s = shed;
      s.context.runOnContext(v -> s.granted.tryFail(new QueueRefused(false)));
    }
    go.forEach(this::grant);
    return turn;
  }

  private void grant(LegTurn t) {
    t.context.runOnContext(v -> {
      if (t.timer >= 0) t.context.owner().cancelTimer(t.timer);
      if (!t.immediate) {
        t.waitedNanos = System.nanoTime() - t.queuedNanos;
        waits.accept(t.lane, t.waitedNanos);
      }
      t.granted.tryComplete();
    });
  }

  /** {@code onlyWaiting}: a wait's timeout, which leaves a turn granted meanwhile running. */
  private void releaseTurn(LegTurn turn, int limit, RuntimeException why, boolean onlyWaiting) {
    List<LegTurn> go = List.of();
    boolean wasWaiting;
    boolean recheck = false;
    Saturation now = new Saturation();
    synchronized (legQueue) {
      wasWaiting = turn.state == LegTurn.WAITING;
      if (onlyWaiting && !wasWaiting) return;
      if (wasWaiting) {
        if (legQueue.remove(turn.entry)) unwait(turn);
      } else if (turn.state == LegTurn.RUNNING) {
        if (turn.prefillCounted) unprefill(turn);
        legsRunning--;
        lastLimit = limit;
        now.ended(turn, limit);
        go = grantTurns(limit, now);
        recheck = scheduleRecheck();
      }
      if (turn.state != LegTurn.DONE) done(turn);
    }
    if (recheck) turn.context.owner().setTimer(RECHECK_MS, t -> recheck(turn.context.owner()));
    if (wasWaiting) turn.context.runOnContext(v -> {
      if (turn.timer >= 0) turn.context.owner().cancelTimer(turn.timer);
      turn.granted.tryFail(why);
    });
    go.forEach(this::grant);
  }

  /** Under the lock: {@code turn} holds no turn any more (released, timed out, shed). */
  private void done(LegTurn turn) {
    turn.state = LegTurn.DONE;
    holdsTurns.computeIfPresent(turn.lane, (l, n) -> n > 1 ? n - 1 : null);
  }

  /** Under the lock: the waiting turns that now run, in the fair queue's order, past those their engines hold. */
  private List<LegTurn> grantTurns(int limit, Saturation now) {
    List<LegTurn> go = new ArrayList<>();
    while (legsRunning < limit && !legQueue.isEmpty()) {
      FairQueue.Entry<LegTurn> e = legQueue.poll(rank -> legsRunning < limitFor(rank, limit), t -> mayStart(t, now));
      if (e == null) break;
      LegTurn next = e.item;
      unwait(next);
      started(next, now);
      next.state = LegTurn.RUNNING;
      legsRunning++;
      go.add(next);
    }
    return go;
  }

  /** Under the lock: whether {@code turn} may start: its engines have room and its producer runs fewer prefills than the bound. */
  private boolean mayStart(LegTurn turn, Saturation now) {
    if (!now.mayRun(turn)) return false;
    if (turn.producer == null) return true;
    int max = prefillLegsMax.getAsInt();
    return max <= 0 || prefilling.getOrDefault(turn.producer, 0) < max;
  }

  /** Under the lock: {@code turn} starts; its prefill counts against its producer while the bound is on. */
  private void started(LegTurn turn, Saturation now) {
    now.started(turn);
    if (turn.producer != null && prefillLegsMax.getAsInt() > 0) {
      turn.prefillCounted = true;
      prefilling.merge(turn.producer, 1, Integer::sum);
    }
  }

  /** Under the lock: {@code turn}'s prefill no longer counts against its producer. */
  private void unprefill(LegTurn turn) {
    turn.prefillCounted = false;
    prefilling.computeIfPresent(turn.producer, (p, n) -> n > 1 ? n - 1 : null);
  }

  /** Under the lock: whether turns wait that a free leg does not start (their engines are saturated) and no re-check is due. */
  private boolean scheduleRecheck() {
    if (recheckScheduled || legQueue.isEmpty() || legsRunning >= lastLimit) return false;
    recheckScheduled = true;
    return true;
  }

  /** Held turns looked at again: those whose engines have room now start. */
  private void recheck(io.vertx.core.Vertx vertx) {
    List<LegTurn> go;
    boolean again;
    synchronized (legQueue) {
      recheckScheduled = false;
      go = grantTurns(lastLimit, new Saturation());
      again = scheduleRecheck();
    }
    if (again) vertx.setTimer(RECHECK_MS, t -> recheck(vertx));
    go.forEach(this::grant);
  }

  /**
   * The engines' room for the models one decision looks at, each asked once. A model's attempts are bounded from a
   * reading that finds its engines saturated until none of them waits here and a reading finds room: meanwhile they
   * start as far as the readings' room goes, less what started here since the oldest reading counted, and in place of
   * attempts of the model that ended here while one of its attempts waited (credits). Otherwise nothing bounds them.
   * Used under the admission's lock.
   */
  private final class Saturation {
    private static final long UNBOUNDED = Long.MAX_VALUE;
    /** How long a start is remembered at most: readings older than this are stale anyway. */
    private static final long REMEMBER_MS = 60_000;
    private static final int REMEMBER_MAX = 100_000;
    /** Made on the first model asked: most decisions of a one-model fleet ask one, many ask none. */
    private java.util.Map<String, long[]> asked;

    /** The starts the model's engines take now ({@link #UNBOUNDED}: no bound); null model: unbounded. */
    private long[] room(String model) {
      if (model == null) return new long[] {UNBOUNDED};
      if (asked == null) asked = new java.util.HashMap<>(4);
      return asked.computeIfAbsent(model, m -> {
        LocalPlacement.Room room = rooms.apply(m);
        if (room == null || !room.bounded()) return unbound(m);
        if (room.saturated()) bounded.add(m);
        else if (bounded.contains(m) && waitingByModel.getOrDefault(m, 0) == 0) unbound(m);
        if (!bounded.contains(m)) return new long[] {UNBOUNDED};
        java.util.ArrayDeque<Long> starts = startedAt.get(m);
        long since = 0;
        if (starts != null) {
          long now = clockMs.getAsLong();
          while (!starts.isEmpty() && (starts.peekFirst() < room.asOfMs() || starts.peekFirst() < now - REMEMBER_MS
              || starts.size() > REMEMBER_MAX)) {
            starts.pollFirst();
          }
          since = starts.size();
        }
        return new long[] {Math.max(0, room.starts() - since)};
      });
    }

    private long[] unbound(String model) {
      bounded.remove(model);
      credits.remove(model);
      startedAt.remove(model);
      return new long[] {UNBOUNDED};
    }

    /** Whether {@code turn} may start: its engines have room, or it replaces an attempt of its model that ended. */
    boolean mayRun(LegTurn turn) {
      return room(turn.model)[0] > 0 || credits.getOrDefault(turn.model, 0) > 0;
    }

    /** {@code turn} starts: against its engines' room, or in place of an ended attempt when they have none. */
    void started(LegTurn turn) {
      long[] room = room(turn.model);
      if (room[0] == UNBOUNDED) return;
      startedAt.computeIfAbsent(turn.model, m -> new java.util.ArrayDeque<>()).addLast(clockMs.getAsLong());
      if (room[0] > 0) room[0]--;
      else credits.computeIfPresent(turn.model, (m, n) -> n > 1 ? n - 1 : null);
    }

    /**
     * A running {@code turn} ended: while its model is bounded and one of its attempts waits, that one may start in its
     * place (a replacement is never saved up for later).
     */
    void ended(LegTurn turn, int limit) {
      if (turn.model == null || waitingByModel.getOrDefault(turn.model, 0) == 0) return;
      if (room(turn.model)[0] != UNBOUNDED) credits.merge(turn.model, 1, (a, b) -> Math.min(Math.max(1, limit), a + b));
    }
  }

  /** Under the lock: {@code turn} no longer waits in the queue. */
  private void unwait(LegTurn turn) {
    if (turn.model != null) waitingByModel.computeIfPresent(turn.model, (m, n) -> n > 1 ? n - 1 : null);
  }

  /** Attempts running their legs now ({@code narwhal_legs_in_flight}). */
  int legsInFlight() {
    synchronized (legQueue) {
      return legsRunning;
    }
  }

  /** Attempts waiting for a turn ({@code narwhal_legs_waiting}). */
  int legsWaiting() {
    synchronized (legQueue) {
      return legQueue.size();
    }
  }

  /** Attempts waiting per priority class, highest first, and per tenant (for {@code /narwhal/state}). */
  io.vertx.core.json.JsonObject queueJson() {
    synchronized (legQueue) {
      io.vertx.core.json.JsonObject byClass = new io.vertx.core.json.JsonObject();
      int[] sizes = legQueue.sizesByClass();
      for (int r = 0; r < sizes.length; r++) byClass.put(narwhal.common.config.TenantConfig.CLASSES.get(r), sizes[r]);
      io.vertx.core.json.JsonObject byTenant = new io.vertx.core.json.JsonObject();
      new java.util.TreeMap<>(legQueue.sizesByTenant()).forEach(byTenant::put);
      Saturation now = new Saturation();
      io.vertx.core.json.JsonObject prefills = new io.vertx.core.json.JsonObject();
      new java.util.TreeMap<>(prefilling).forEach(prefills::put);
      return new io.vertx.core.json.JsonObject().put("running", legsRunning).put("waiting", legQueue.size())
          .put("held_by_engines", legQueue.count(t -> !now.mayRun(t)))
          .put("held_by_producers", legQueue.count(t -> now.mayRun(t) && !mayStart(t, now)))
          .put("prefills_running", prefills)
          .put("waiting_by_class", byClass).put("waiting_by_tenant", byTenant);
    }
  }
}
