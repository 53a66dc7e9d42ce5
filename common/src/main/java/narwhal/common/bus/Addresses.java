package narwhal.common.bus;

/** Event-bus addresses. Placement and breaker addresses are local-only; {@link #ADMIN}, {@link #FLEET_CHANGED},
 * {@link #STREAK_CHANGED}, {@link #LIVENESS_SWEPT}, {@link #PLACEMENT_PREFIXES}, {@link #PLACEMENT_LISTINGS}, {@link #PLACEMENT_SENT}, {@link #PLACEMENT_LOADS}, {@link #PLACEMENT_SNAPSHOT} and
 * {@link #CONFIG_RELOAD} cross the cluster. */
public final class Addresses {
  /** Request-reply: a {@link ReserveRequest}, answered with a {@link Reservation} or a {@link Failures#NO_ENGINE} failure. */
  public static final String PLACEMENT_RESERVE = "narwhal.placement.reserve";
  /** Fire-and-forget: {@code {"id": reservation id}}. */
  public static final String PLACEMENT_RELEASE = "narwhal.placement.release";
  /** Request-reply: a snapshot of engines, their states and reservations per phase. */
  public static final String PLACEMENT_STATE = "narwhal.placement.state";
  /** Request-reply: {@code {"data": [model card, …]}}, the union of what serving engines list in their {@code /v1/models}. */
  public static final String PLACEMENT_MODELS = "narwhal.placement.models";
  /**
   * Fire-and-forget: {@code {"iid", "model"}}, an adapter (or alias) the engine answered "does not exist" for: placement
   * drops it from the engine's listing until its next {@code /v1/models} reading.
   */
  public static final String PLACEMENT_UNLIST = "narwhal.placement.unlist";
  /**
   * Local publish: placement read an engine's {@code /v1/models} (at start, when it enters service, on a reload, every
   * {@code placement.models_refresh_s}): {@code {"iid", "max_model_len"}}, the context its own model's card gives
   * ({@code max_model_len} absent when the card names none). The router's learned context is this reading's.
   */
  public static final String PLACEMENT_LISTED = "narwhal.placement.listed";
  /**
   * Cluster publish: {@code {"origin", "iid", "cards": [...]}}, an engine's {@code /v1/models} listing as its owner's
   * periodic refresh read it, so the other replicas need not read it too.
   */
  public static final String PLACEMENT_LISTINGS = "narwhal.placement.listings";
  /**
   * Cluster publish: a {@link PrefixesPlaced}, a replica's prefix placements of the last
   * {@code PrefixExchange} period, so every replica sends a prefix to the producer that caches it.
   */
  public static final String PLACEMENT_PREFIXES = "narwhal.placement.prefixes";
  /**
   * Cluster publish: a {@link LegsSent}, a replica's legs sent to each engine since its reading, when they changed
   * (checked every 100 ms) and at least once per reading interval.
   */
  public static final String PLACEMENT_SENT = "narwhal.placement.sent";
  /**
   * Cluster publish: {@code {"origin", "readings": [...]}}, the engine load readings a replica took in one round (of
   * the engines it owns, or took over from an owner gone quiet), for every other replica.
   */
  public static final String PLACEMENT_LOADS = "narwhal.placement.loads";
  /**
   * Cluster request-reply: {@code {"origin"}}, a replica that starts or comes back asks one peer for its prefix index,
   * answered in {@link PrefixSnapshot} chunks (each reply to a chunk asks for the next); failure
   * {@link Failures#OWN_REPLICA} when the request reached the replica that sent it.
   */
  public static final String PLACEMENT_SNAPSHOT = "narwhal.placement.snapshot";
  /**
   * Local: a router replica joined this replica's cluster, a new one or one back from a freeze or a partition (the
   * split clusters merged): each side may have missed the other's prefix exchanges, so placement takes a snapshot, and
   * the other's engine-state messages, so the breaker resyncs with the shared state. Published (both listen).
   */
  public static final String PLACEMENT_PEER_JOINED = "narwhal.placement.peer-joined";
  /** Cluster publish: a replica's use of the tenants' quotas ({@link UsageReport}), every second. */
  public static final String TENANT_USAGE = "narwhal.tenants.usage";
  /** Fire-and-forget: a leg outcome for the breaker. */
  public static final String BREAKER_OUTCOME = "narwhal.breaker.outcome";
  /** Cluster publish: one engine's streak of one failure class changed ({@code {"origin", "iid", "class", "streak"}}). */
  public static final String STREAK_CHANGED = "narwhal.breaker.streak";
  /**
   * Cluster publish: {@code {"origin", "iids": [...]}}, the serving engines whose {@code /health} a replica checks in
   * one liveness sweep (its own, or taken over from an owner gone quiet), so no other replica checks them again.
   */
  public static final String LIVENESS_SWEPT = "narwhal.breaker.liveness";
  /** Request-reply: the breaker's view: each engine's state, cause and streaks per class, and the fleet hold. */
  public static final String BREAKER_STATE = "narwhal.breaker.state";
  /**
   * Cluster publish: an engine's placement state changed (an {@link EngineStateEvent}), or the fleet hold did
   * (a {@link FleetHoldEvent}).
   */
  public static final String FLEET_CHANGED = "narwhal.fleet.changed";
  /** Fire-and-forget: a non-request row for the journal (engine state changes, probes), written by the router's journal. */
  public static final String JOURNAL_EVENT = "narwhal.journal.event";
  /** Local publish: the fleet file was reloaded; the body is the new configuration's JSON. */
  public static final String CONFIG_CHANGED = "narwhal.config.changed";
  /**
   * Local request: run the readmission checks on an engine at the address a reload gives it, before the router uses
   * it (the body is the candidate's {@code EngineConfig} JSON); the reply is {@code {"passed", "why"}}.
   */
  public static final String CANDIDATE_CHECK = "narwhal.breaker.candidate-check";
  /**
   * Local publish, just before the {@link #CONFIG_CHANGED} that applies it: the iids ({@code {"iids": [...]}}) whose new
   * address passed {@link #CANDIDATE_CHECK}, so the breaker keeps them serving across the change.
   */
  public static final String ENGINES_REPOINTED = "narwhal.fleet.repointed";
  /** Local publish: a secret file (client keys, ops or admin token, engine key) changed and was re-read; no body. */
  public static final String SECRETS_CHANGED = "narwhal.secrets.changed";
  /** Local publish: a changed fleet file was refused; {@code {"key", "message"}}. */
  public static final String CONFIG_REFUSED = "narwhal.config.refused";
  /** Cluster publish: every replica re-reads its fleet file now (the {@code reload-config} admin command). */
  public static final String CONFIG_RELOAD = "narwhal.config.reload";
  /** Request-reply admin commands (docs/operations.md#admin-commands): an {@link AdminCommand}. */
  public static final String ADMIN = "narwhal.admin";
  /**
   * Request-reply, local only: the same commands from the admin endpoint of this replica's health port
   * (docs/operations.md#admin-commands); never registered on the cluster, so no other member can answer it.
   */
  public static final String ADMIN_LOCAL = "narwhal.admin-local";

  private Addresses() {
  }
}
