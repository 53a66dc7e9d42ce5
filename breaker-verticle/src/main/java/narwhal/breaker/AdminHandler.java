package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonObject;
import narwhal.common.auth.BearerKeys;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.AdminCommand;
import narwhal.common.bus.AdminProof;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.Failures;

import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Serves the {@link AdminCommand}s of docs/operations.md#admin-commands on {@link Addresses#ADMIN}: checks the caller
 * knows the token (every command but {@code state} needs it) by its {@link AdminProof} ({@link AdminProofs}: fresh,
 * not replayed on this replica, nor, as far as the shared state tells, on another), or, only while no cluster secret is set, by a {@code token} header; checks the arguments, applies
 * the command to the book and replies with the breaker's state once the change is cluster state, with every replica's
 * view gathered ({@link Peers}); an engine command's reply says whether the shared state shows what it asked for
 * ({@code effect}). The reply is signed for the proof's nonce with the token and sealed with the cluster secret, so
 * the caller can tell it from a foreign member's. A wave restart first validates the whole fleet. A command about an
 * engine this replica's fleet file does not list goes to a replica that lists it.
 */
final class AdminHandler {
  /** Header of a command one replica passed to another: it is not passed on again. */
  static final String FORWARDED = "forwarded-by";
  private static final long FORWARD_TIMEOUT_MS = 30_000;
  /** How long an engine command waits for the shared state to show what it asked for. */
  static final long EFFECT_WAIT_MS = 3_000;
  private static final long EFFECT_READ_EVERY_MS = 50;

  /** The other replicas: their views gathered into a reply, and which of them lists an engine. */
  interface Peers {
    /** {@code own} with {@code replicas}: every replica's view ({@code replica}, {@code member}, {@code answered}, {@code engines}). */
    Future<JsonObject> gathered(JsonObject own);

    /** The admin address of another replica that lists {@code iid}, or null when none does. */
    Future<String> listing(String iid);

    /** A replica alone. */
    Peers NONE = new Peers() {
      @Override
      public Future<JsonObject> gathered(JsonObject own) {
        return Future.succeededFuture(own);
      }

      @Override
      public Future<String> listing(String iid) {
        return Future.succeededFuture(null);
      }
    };
  }

  /** What the handler reads from and records in the cluster's shared state. */
  interface SharedReads {
    /** One engine's entry in the shared state map, or null when none. */
    Future<JsonObject> state(String iid);

    /** Records an admin proof's nonce cluster-wide for {@code ttlMs}; true when no replica took it before. */
    Future<Boolean> firstUse(String nonce, long ttlMs);
  }

  private final Vertx vertx;
  private final BreakerBook book;
  private final OutcomeIntake intake;
  private final ProbeScheduler probes;
  private final BreakerMetrics metrics;
  private final Supplier<String> token;
  private final Supplier<JsonObject> state;
  private final Peers peers;
  private final SharedReads shared;
  private final AdminProofs proofs;

  /**
   * @param token       the configured admin token, or null when none is set
   * @param shared the shared state: an engine's entry read back after an engine command, proofs' nonces recorded
   */
  AdminHandler(Vertx vertx, BreakerBook book, OutcomeIntake intake, ProbeScheduler probes, BreakerMetrics metrics,
               Supplier<String> token, Supplier<JsonObject> state, SharedReads shared) {
    this(vertx, book, intake, probes, metrics, token, state, Peers.NONE, shared, System::currentTimeMillis);
  }

  /** @param wallClockMs the wall clock proofs are judged fresh by (epoch milliseconds) */
  AdminHandler(Vertx vertx, BreakerBook book, OutcomeIntake intake, ProbeScheduler probes, BreakerMetrics metrics,
               Supplier<String> token, Supplier<JsonObject> state, Peers peers, SharedReads shared, LongSupplier wallClockMs) {
    this.peers = peers;
    this.shared = shared;
    this.proofs = new AdminProofs(wallClockMs);
    this.vertx = vertx;
    this.book = book;
    this.intake = intake;
    this.probes = probes;
    this.metrics = metrics;
    this.token = token;
    this.state = state;
  }

  /** The configured token, read through {@code secrets} from the file or variable {@code source} names; null when unset or empty. */
  static Supplier<String> token(Supplier<narwhal.common.config.SecretRef> source, UnaryOperator<String> secrets) {
    return () -> {
      String value = secrets.apply(source.get().lookupName());
      return value == null || value.isEmpty() ? null : value;
    };
  }

  void handle(Message<JsonObject> msg) {
    JsonObject body = msg.body() == null ? new JsonObject() : msg.body();
    String name = body.getValue("command") instanceof String c ? c : "";
    AdminCommand command = AdminCommand.parse(name).orElse(null);
    JsonObject args = body.getValue("args") instanceof JsonObject a ? a : new JsonObject();
    JsonObject proof = body.getValue(AdminProof.FIELD) instanceof JsonObject p ? p : null;
    String nonce = proof == null ? "" : String.valueOf(proof.getValue("nonce"));
    String refusal = credentialRefusal(msg, command, name, args, proof);
    if (refusal != null) {
      metrics.adminRefused();
      msg.fail(Failures.UNAUTHORIZED, refusal);
      return;
    }
    if (proof == null) {
      carryOut(msg, body, command, name, args, nonce);
      return;
    }
    shared.firstUse(nonce, 2 * AdminProof.FRESH_MS).onComplete(first -> {
      if (first.succeeded() && !first.result()) {
        metrics.adminRefused();
        msg.fail(Failures.UNAUTHORIZED, AdminProofs.REPLAYED);
      } else {
        carryOut(msg, body, command, name, args, nonce);
      }
    });
  }

  /** Carries out a command whose caller is admitted. */
  private void carryOut(Message<JsonObject> msg, JsonObject body, AdminCommand command, String name, JsonObject args, String nonce) {
    if (command == null) {
      msg.fail(Failures.BAD_MESSAGE, "unknown admin command \"" + name + "\"");
      return;
    }
    String iid = args.getString("iid");
    if (command.aboutEngine() && (iid == null || !book.knows(iid))) {
      if (iid == null || msg.headers().get(FORWARDED) != null) {
        msg.fail(Failures.BAD_MESSAGE, name + ": unknown engine " + iid);
      } else {
        forward(msg, body, name, iid, nonce);
      }
      return;
    }
    boolean force = Boolean.TRUE.equals(args.getValue("force"));
    try {
      switch (command) {
        case STATE -> reply(msg, nonce, null);
        case EJECT -> replyAfter(msg, nonce, command, iid, () -> book.eject(iid, force));
        case READMIT -> replyAfter(msg, nonce, command, iid, () -> book.readmit(iid));
        case QUARANTINE -> quarantine(msg, nonce, iid, args.getValue("seconds"), force);
        case DRAIN -> replyAfter(msg, nonce, command, iid, () -> book.drain(iid, true, force));
        case UNDRAIN -> replyAfter(msg, nonce, command, iid, () -> book.drain(iid, false, force));
        case WAVE_RESTART -> waveRestart(msg, nonce);
        case RELOAD_CONFIG -> {
          vertx.eventBus().publish(Addresses.CONFIG_RELOAD, ClusterSeal.of(vertx).seal(Addresses.CONFIG_RELOAD,
              new JsonObject().put("at_ms", System.currentTimeMillis())));
          respond(msg, nonce, new JsonObject().put("reload", "requested on every replica"));
        }
      }
    } catch (RuntimeException e) {
      msg.fail(Failures.BAD_MESSAGE, e.getMessage());
    }
  }

  /**
   * Why the caller is refused (401), or null. A proof given must hold even for {@code state}; a {@code token} header
   * is taken only while no cluster secret is set (a secret means the bus may carry foreign members' handlers).
   */
  private String credentialRefusal(Message<JsonObject> msg, AdminCommand command, String name, JsonObject args, JsonObject proof) {
    String expected = token.get();
    String header = msg.headers().get("token");
    if (proof != null) return proofs.refusal(expected, name, args, proof);
    if (command != null && !command.needsToken() && header == null) return null;
    if (header != null && ClusterSeal.of(vertx).enabled()) {
      return "the admin token is refused in the clear while a cluster secret is set: send a proof (narwhal admin does; "
          + "update it), or use the admin endpoint on server.health_port";
    }
    if (!BearerKeys.same(expected, header)) {
      return expected == null ? "admin commands other than state need a configured admin token" : "admin token missing or wrong";
    }
    return null;
  }

  private void quarantine(Message<JsonObject> msg, String nonce, String iid, Object seconds, boolean force) {
    if (!(seconds instanceof Number n)) {
      msg.fail(Failures.BAD_MESSAGE, "quarantine: seconds: " + seconds + " is not valid: expected a number > 0");
      return;
    }
    replyAfter(msg, nonce, AdminCommand.QUARANTINE, iid, () -> book.quarantine(iid, n.doubleValue(), force));
  }

  /**
   * Applies an admin step and replies with the state once the change is in the shared map, with the {@code effect} the
   * shared state shows; a step the book refuses (an argument out of range, the last engine of a role without force) is
   * a 400 naming why.
   */
  private void replyAfter(Message<JsonObject> msg, String nonce, AdminCommand command, String iid, Supplier<List<BreakerAction>> step) {
    List<BreakerAction> actions;
    try {
      actions = step.get();
    } catch (IllegalArgumentException refused) {
      msg.fail(Failures.BAD_MESSAGE, refused.getMessage());
      return;
    }
    intake.step(() -> actions).transform(v -> command == null ? Future.succeededFuture((JsonObject) null)
        : effect(command, iid, System.nanoTime() + EFFECT_WAIT_MS * 1_000_000))
        .onComplete(effect -> reply(msg, nonce, effect.succeeded() ? effect.result() : null));
  }

  /** The state an engine command asks for, as the shared state names it (undrain: anything but draining). */
  static String asked(AdminCommand command) {
    return switch (command) {
      case EJECT -> "ejected";
      case READMIT -> "serving";
      case QUARANTINE -> "quarantined";
      case DRAIN -> "draining";
      case UNDRAIN -> "not draining";
      default -> throw new IllegalArgumentException(command + " is not an engine command");
    };
  }

  private static Predicate<String> wanted(AdminCommand command) {
    String asked = asked(command);
    return command == AdminCommand.UNDRAIN ? s -> s != null && !"draining".equals(s) : asked::equals;
  }

  /**
   * {@code {"iid", "asked", "seen", "done"}}: the engine's state in the shared state map, read until it is the one
   * {@code command} asked for or {@code deadlineNanos} passes ({@code seen} "absent" or "unreadable" when there is none).
   */
  private Future<JsonObject> effect(AdminCommand command, String iid, long deadlineNanos) {
    return shared.state(iid).map(entry -> entry == null ? "absent" : entry.getString("state", "absent"))
        .otherwise("unreadable")
        .compose(seen -> {
          boolean done = wanted(command).test(seen);
          if (done || System.nanoTime() >= deadlineNanos) {
            return Future.succeededFuture(new JsonObject().put("iid", iid).put("asked", asked(command)).put("seen", seen).put("done", done));
          }
          io.vertx.core.Promise<Void> later = io.vertx.core.Promise.promise();
          vertx.setTimer(EFFECT_READ_EVERY_MS, t -> later.complete());
          return later.future().compose(v -> effect(command, iid, deadlineNanos));
        });
  }

  /** Replies with this replica's state and every replica's view (this one's alone if gathering fails), and the effect if any. */
  private void reply(Message<JsonObject> msg, String nonce, JsonObject effect) {
    JsonObject flow = narwhal.common.bus.FlowStatus.of(vertx);
    JsonObject own = flow == null ? state.get() : state.get().copy().put("flow", flow);
    peers.gathered(own).onComplete(ar -> {
      JsonObject reply = ar.succeeded() ? ar.result() : own;
      respond(msg, nonce, effect == null ? reply : reply.copy().put("effect", effect));
    });
  }

  /** Replies signed for the proof's nonce with the token (when there is a proof) and sealed with the cluster secret. */
  private void respond(Message<JsonObject> msg, String nonce, JsonObject reply) {
    String expected = token.get();
    JsonObject signed = nonce.isEmpty() || expected == null ? AdminProof.unsigned(reply) : AdminProof.signReply(expected, nonce, reply);
    msg.reply(ClusterSeal.of(vertx).seal(Addresses.ADMIN, nonce, signed));
  }

  /**
   * An engine this replica does not list: the command goes to a replica that lists it (its fleet file differs from
   * this one's), whose reply (with {@code forwarded_by}: this replica) or refusal is the answer; "unknown engine" only
   * when no replica lists it.
   */
  private void forward(Message<JsonObject> msg, JsonObject body, String name, String iid, String nonce) {
    peers.listing(iid).onComplete(ar -> {
      if (ar.failed() || ar.result() == null) {
        msg.fail(Failures.BAD_MESSAGE, name + ": unknown engine " + iid);
        return;
      }
      DeliveryOptions options = new DeliveryOptions().setSendTimeout(FORWARD_TIMEOUT_MS).addHeader(FORWARDED, "1");
      String given = msg.headers().get("token");
      if (given != null) options.addHeader("token", given);
      // a proven command goes on with a proof of this replica's own: the caller's nonce is taken cluster-wide
      JsonObject onward = nonce.isEmpty() ? body : AdminProof.body(token.get(), name,
          body.getValue("args") instanceof JsonObject a ? a : new JsonObject(), System.currentTimeMillis());
      String onwardNonce = onward.getValue(AdminProof.FIELD) instanceof JsonObject p ? p.getString("nonce") : "";
      vertx.eventBus().<JsonObject>request(ar.result(), onward, options).onComplete(reply -> {
        if (reply.succeeded()) {
          JsonObject answer = verified(reply.result().body(), onwardNonce);
          if (answer == null) {
            msg.fail(Failures.BAD_MESSAGE, name + ": the replica listing " + iid + " answered with a reply that does not verify "
                + "(a foreign member on " + ar.result() + "?)");
          } else {
            respond(msg, nonce, answer.put("forwarded_by", book.origin()));
          }
        } else if (reply.cause() instanceof ReplyException refused && refused.failureType() == ReplyFailure.RECIPIENT_FAILURE) {
          msg.fail(refused.failureCode(), refused.getMessage());
        } else {
          msg.fail(Failures.BAD_MESSAGE, name + ": " + iid + " is listed only by replicas that did not answer: " + reply.cause().getMessage());
        }
      });
    });
  }

  /** Another replica's reply, unsigned, if it verifies with the cluster secret and (for a proven command) the token; else null. */
  private JsonObject verified(JsonObject reply, String nonce) {
    if (reply == null) return null;
    ClusterSeal seal = ClusterSeal.of(vertx);
    if (seal.enabled() && seal.open(Addresses.ADMIN, nonce, reply) == null) return null;
    if (!nonce.isEmpty() && !AdminProof.replyVerifies(token.get(), nonce, reply)) return null;
    return AdminProof.unsigned(reply);
  }

  private void waveRestart(Message<JsonObject> msg, String nonce) {
    if (book.nothingToRestart()) {
      msg.fail(Failures.BAD_MESSAGE, "wave-restart: nothing to do: engine_restart_policy is individual and no fleet hold is on "
          + "(engines come back one by one through readmission)");
      return;
    }
    probes.validateFleet().onSuccess(failed -> {
      if (!failed.isEmpty()) {
        msg.fail(Failures.BAD_MESSAGE, "wave-restart: validation failed for " + String.join(", ", failed)
            + (book.fleetHold() ? "; the fleet stays held" : ""));
        return;
      }
      replyAfter(msg, nonce, null, null, book::waveRestarted);
    });
  }
}
