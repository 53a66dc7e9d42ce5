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
    List<int[]> diagonal = new ArrayList<>();
    List<EngineConfig> producers = cfg.engines().stream().filter(e -> e.role().canPrefill()).toList();
    List<EngineConfig> consumers = cfg.engines().stream().filter(e -> e.role().canDecode()).toList();
    for (int p = 0; p < producers.size(); p++) {
      EngineConfig producer = producers.get(p);
      for (int c = 0; c < consumers.size(); c++) {
        EngineConfig consumer = consumers.get(c);
        if (!consumer.model().equals(producer.model())) continue;
        if (consumer.iid().equals(producer.iid()) && sameModel(producer) > 1) continue;
        diagonal.add(new int[] {Math.floorMod(c - p, consumers.size()), p, transfers.size()});
        transfers.add(List.of(producer.iid(), consumer.iid()), rows -> transferCheck(engines, producer, consumer, rows));
      }
    }
    diagonal.sort(java.util.Comparator.<int[]>comparingInt(d -> d[0]).thenComparingInt(d -> d[1]));
    List<Integer> spread = diagonal.stream().map(d -> d[2]).toList();
    return own.run(listed, progress).onSuccess(checks::addAll)
        .compose(v -> transfers.run(spread, progress)).onSuccess(checks::addAll)
        .eventually(engines::close)
        .map(v -> new PreflightReport(checks));
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

  /** How many engines of the fleet serve {@code engine}'s model. */
  private long sameModel(EngineConfig engine) {
    return cfg.engines().stream().filter(e -> e.model().equals(engine.model())).count();
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
