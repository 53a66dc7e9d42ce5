package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;
import narwhal.engines.checks.CheckFailure;
import narwhal.engines.checks.EngineAttestation;
import narwhal.engines.checks.EngineChecks;
import narwhal.engines.checks.ProbeBounds;
import narwhal.engines.connector.EngineContract;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * Checks the fleet before serving (docs/operations.md#processes): every engine healthy, listing the model and matching the
 * pinned {@code engine_contract}; every prefill-permitted engine producing a valid handoff; every
 * role-permitted producer→consumer pair decoding with it. Talks to engines through {@link EngineChecks}, as the
 * breaker's probes do, so the engines' API key and bounds are the same. Records attested facts (KV lease, side
 * channel, connector) and each engine's context ({@code max_model_len}, its tokenizer's special tokens) for the
 * router as it goes. A failed row says why.
 */
public final class Preflight {
  /**
   * Engines (then producer→consumer pairs) checked at once, never two checks on one engine; pairs go in diagonals
   * (P0→D0, P1→D1, …, then P0→D1, …) so the next pair free of busy engines is near the head of the queue.
   */
  static final int CHECKS_AT_ONCE = 8;
  /** Up to this many producer→consumer pairs per model, {@link Pairs#AUTO} checks them all; beyond it, a covering set. */
  static final int ALL_PAIRS_UP_TO = 64;

  /**
   * Which producer→consumer pairs a run checks with a real handoff. Every pair is the strongest check (a firewall
   * between two hosts shows), but P × D grows with the square of the fleet: 200 producers and 800 decode engines are
   * 160,000 handoffs. A covering set checks each engine in one pair at least (max(P, D) pairs per model).
   */
  public enum Pairs {
    /** Every pair ({@code narwhal preflight}). */
    ALL,
    /** Every pair up to {@link #ALL_PAIRS_UP_TO} per model, else a covering set ({@code serve}'s start). */
    AUTO,
    /** No pair: a replica joining a cluster that already judged the engines ({@code serve --cluster}, not the first). */
    NONE
  }

  private Pairs pairs = Pairs.AUTO;
  private final Vertx vertx;
  private final NarwhalConfig cfg;
  private final EngineFacts facts;
  private final UnaryOperator<String> env;

  public Preflight(Vertx vertx, NarwhalConfig cfg, EngineFacts facts) {
    this(vertx, cfg, facts, System::getenv);
  }

  /** @param env reads environment variables (the engines' API key); tests pass their own */
  public Preflight(Vertx vertx, NarwhalConfig cfg, EngineFacts facts, UnaryOperator<String> env) {
    this.vertx = vertx;
    this.cfg = cfg;
    this.facts = facts;
    this.env = env;
  }

  /** Which pairs to check (default {@link Pairs#AUTO}). */
  public Preflight pairs(Pairs pairs) {
    this.pairs = pairs;
    return this;
  }

  /**
   * Runs the checks (at most {@link #CHECKS_AT_ONCE} at once, one per engine), reporting each result to {@code progress} as it completes. The checks run on a Vert.x
   * context whoever calls: HTTP exchanges wired from a plain thread can lose a fast response.
   */
  public Future<PreflightReport> run(Consumer<PreflightReport.Check> progress) {
    if (Vertx.currentContext() != null) return checks(progress);
    Promise<PreflightReport> report = Promise.promise();
    vertx.getOrCreateContext().runOnContext(v -> checks(progress).onComplete(report));
    return report.future();
  }

  private Future<PreflightReport> checks(Consumer<PreflightReport.Check> progress) {
    EngineChecks engines = new EngineChecks(vertx, () -> cfg, env);
    List<PreflightReport.Check> checks = new ArrayList<>();
    Consumer<PreflightReport.Check> record = c -> {
      checks.add(c);
      progress.accept(c);
    };
    narwhal.common.config.SecretRef key = cfg.engine().engineApiKey();
    if (key.configured() && cfg.engine().engineApiKey(env).isEmpty()) {
      record.accept(new PreflightReport.Check("fleet", "engine key", false, key.key() + " names " + key.describe()
          + ", which is " + (key.file().isEmpty() ? "not set (or empty)" : "missing, unreadable or empty")
          + ": engines started with --api-key will refuse every request"));
    }
    CheckQueue<PreflightReport.Check> own = new CheckQueue<>(CHECKS_AT_ONCE);
    List<Integer> listed = new ArrayList<>();
    for (EngineConfig engine : cfg.engines()) {
      listed.add(own.size());
      own.add(List.of(engine.iid()), rows -> engineChecks(engines, engine, rows));
    }
    CheckQueue<PreflightReport.Check> transfers = new CheckQueue<>(CHECKS_AT_ONCE);
    List<int[]> order = new ArrayList<>();
    for (String model : cfg.models()) {
      List<EngineConfig> producers = cfg.engines().stream().filter(e -> e.role().canPrefill() && e.model().equals(model)).toList();
      List<EngineConfig> consumers = cfg.engines().stream().filter(e -> e.role().canDecode() && e.model().equals(model)).toList();
      for (int[] pc : pairsOf(producers, consumers)) {
        EngineConfig producer = producers.get(pc[0]);
        EngineConfig consumer = consumers.get(pc[1]);
        // diagonals first (P0→D0, P1→D1, …): the next pair free of busy engines is near the head of the queue
        order.add(new int[] {Math.floorMod(pc[1] - pc[0], consumers.size()), pc[0], transfers.size()});
        transfers.add(List.of(producer.iid(), consumer.iid()), rows -> transferCheck(engines, producer, consumer, rows));
      }
    }
    order.sort(java.util.Comparator.<int[]>comparingInt(d -> d[0]).thenComparingInt(d -> d[1]));
    List<Integer> spread = order.stream().map(d -> d[2]).toList();
    return own.run(listed, progress).onSuccess(checks::addAll)
        .compose(v -> transfers.run(spread, progress)).onSuccess(checks::addAll)
        .eventually(engines::close)
        .map(v -> new PreflightReport(checks));
  }

  /**
   * The (producer, consumer) index pairs of one model to check: all of them ({@link Pairs#ALL}, or {@link Pairs#AUTO}
   * up to {@link #ALL_PAIRS_UP_TO}), a covering set in which every producer and every consumer takes part, or none. An
   * engine that both prefills and decodes is not paired with itself when the model has other engines.
   */
  private List<int[]> pairsOf(List<EngineConfig> producers, List<EngineConfig> consumers) {
    List<int[]> all = new ArrayList<>();
    if (pairs == Pairs.NONE || producers.isEmpty() || consumers.isEmpty()) return all;
    boolean others = producers.size() + consumers.size() > 2 || !producers.get(0).iid().equals(consumers.get(0).iid());
    for (int p = 0; p < producers.size(); p++) {
      for (int c = 0; c < consumers.size(); c++) {
        if (others && producers.get(p).iid().equals(consumers.get(c).iid())) continue;
        all.add(new int[] {p, c});
      }
    }
    if (pairs == Pairs.ALL || all.size() <= ALL_PAIRS_UP_TO) return all;
    List<int[]> cover = new ArrayList<>();
    int n = Math.max(producers.size(), consumers.size());
    for (int i = 0; i < n; i++) {
      int p = i % producers.size();
      int c = i % consumers.size();
      if (producers.get(p).iid().equals(consumers.get(c).iid())) c = (c + 1) % consumers.size();
      cover.add(new int[] {p, c});
    }
    return cover;
  }

  private Future<Void> engineChecks(EngineChecks engines, EngineConfig engine, Consumer<PreflightReport.Check> record) {
    return step(engines.health(engine), engine.iid(), "health", "200", record).compose(healthy -> !healthy ? Future.succeededFuture()
        : step(engines.modelCard(engine).map(card -> {
              if (card.getValue("max_model_len") instanceof Number n && n.intValue() > 0) facts.maxModelLen(engine.iid(), n.intValue());
              return null;
            }).mapEmpty(), engine.iid(), "model", engine.model(), record)
            .compose(listed -> learnTokenizer(engines, engine))
            .compose(v -> engines.attestation(engine).transform(ar -> {
              boolean pinned = cfg.engineContract() != null;
              if (ar.failed()) {
                String why = CheckFailure.reasonOf(ar.cause());
                record.accept(new PreflightReport.Check(engine.iid(), "contract", !pinned,
                    pinned ? "attestation unavailable: " + why : "no attestation (" + why + "); no contract pinned"));
                return Future.succeededFuture();
              }
              EngineAttestation attested = ar.result();
              facts.learn(engine.iid(), attested);
              String mismatch = attested.mismatch(EngineContract.forModel(cfg.engineContract(), engine.model()));
              record.accept(new PreflightReport.Check(engine.iid(), "contract", mismatch == null,
                  mismatch == null ? (pinned ? "matches" : "no contract pinned") : mismatch));
              return Future.succeededFuture();
            })));
  }

  /**
   * How many tokens the engine makes of a one-character prompt (its special tokens): with it a short prompt's fit in
   * the context is settled by its size alone. An engine without {@code /tokenize} leaves it unknown; not a failed check.
   */
  private Future<Void> learnTokenizer(EngineChecks engines, EngineConfig engine) {
    if (facts.context(engine.iid()) == null) return Future.succeededFuture();
    return engines.tokenize(engine, new io.vertx.core.json.JsonObject().put("model", engine.model()).put("prompt", "x"))
        .<Void>map(answer -> {
          if (answer.getValue("count") instanceof Number n) facts.oneCharTokens(engine.iid(), n.intValue());
          return null;
        })
        .otherwiseEmpty();
  }

  private Future<Void> transferCheck(EngineChecks engines, EngineConfig producer, EngineConfig consumer,
                                     Consumer<PreflightReport.Check> record) {
    EngineFacts.Facts pf = facts.get(producer.iid());
    EngineAttestation attested = new EngineAttestation(null, pf.kvLeaseS(), pf.sideChannel(), pf.connector());
    return step(engines.transfer(producer, consumer, engines.expectations(attested), ProbeBounds.preflight(cfg), "preflight"),
        producer.iid() + "→" + consumer.iid(), "kv transfer", "decoded with the handoff", record).mapEmpty();
  }

  /** Records one check's row: {@code passed} when it succeeds, the failed step and its reason when not. */
  private static Future<Boolean> step(Future<Void> check, String target, String name, String passed,
                                      Consumer<PreflightReport.Check> record) {
    return check.transform(ar -> {
      record.accept(new PreflightReport.Check(target, name, ar.succeeded(), ar.succeeded() ? passed : CheckFailure.describe(ar.cause())));
      return Future.succeededFuture(ar.succeeded());
    });
  }
}
