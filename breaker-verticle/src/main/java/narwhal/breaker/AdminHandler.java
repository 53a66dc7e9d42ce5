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
import narwhal.common.bus.Failures;

import java.util.List;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Serves the {@link AdminCommand}s of docs/operations.md#admin-commands on {@link Addresses#ADMIN}: checks the token (every command but
 * {@code state} needs it), checks the arguments, applies the command to the book and replies with the breaker's state
 * once the change is cluster state, with every replica's view gathered ({@link Peers}); a wave restart first validates
 * the whole fleet. A command about an engine this replica's fleet file does not list goes to a replica that lists it.
 */
final class AdminHandler {
  /** Header of a command one replica passed to another: it is not passed on again. */
  static final String FORWARDED = "forwarded-by";
  private static final long FORWARD_TIMEOUT_MS = 30_000;

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

  private final Vertx vertx;
  private final BreakerBook book;
  private final OutcomeIntake intake;
  private final ProbeScheduler probes;
  private final BreakerMetrics metrics;
  private final Supplier<String> token;
  private final Supplier<JsonObject> state;
  private final Peers peers;

  /** @param token the configured admin token, or null when none is set */
  AdminHandler(Vertx vertx, BreakerBook book, OutcomeIntake intake, ProbeScheduler probes, BreakerMetrics metrics,
               Supplier<String> token, Supplier<JsonObject> state) {
    this(vertx, book, intake, probes, metrics, token, state, Peers.NONE);
  }

  AdminHandler(Vertx vertx, BreakerBook book, OutcomeIntake intake, ProbeScheduler probes, BreakerMetrics metrics,
               Supplier<String> token, Supplier<JsonObject> state, Peers peers) {
    this.peers = peers;
    this.vertx = vertx;
    this.book = book;
    this.intake = intake;
    this.probes = probes;
    this.metrics = metrics;
    this.token = token;
    this.state = state;
  }

  /** The configured token: the value of the environment variable {@code tokenEnv} names, null when unset or empty. */
  static Supplier<String> token(Supplier<String> tokenEnv, UnaryOperator<String> env) {
    return () -> {
      String value = env.apply(tokenEnv.get());
      return value == null || value.isEmpty() ? null : value;
    };
  }

  void handle(Message<JsonObject> msg) {
    JsonObject body = msg.body() == null ? new JsonObject() : msg.body();
    String name = body.getString("command", "");
    AdminCommand command = AdminCommand.parse(name).orElse(null);
    JsonObject args = body.getJsonObject("args", new JsonObject());
    String expected = token.get();
    if ((command == null || command.needsToken()) && !BearerKeys.same(expected, msg.headers().get("token"))) {
      metrics.adminRefused();
      msg.fail(Failures.UNAUTHORIZED, expected == null ? "admin commands other than state need a configured admin token"
          : "admin token missing or wrong");
      return;
    }
    if (command == null) {
      msg.fail(Failures.BAD_MESSAGE, "unknown admin command \"" + name + "\"");
      return;
    }
    String iid = args.getString("iid");
    if (command.aboutEngine() && (iid == null || !book.knows(iid))) {
      if (iid == null || msg.headers().get(FORWARDED) != null) {
        msg.fail(Failures.BAD_MESSAGE, name + ": unknown engine " + iid);
      } else {
        forward(msg, body, name, iid);
      }
      return;
    }
    boolean force = Boolean.TRUE.equals(args.getValue("force"));
    try {
      switch (command) {
        case STATE -> reply(msg);
        case EJECT -> replyAfter(msg, () -> book.eject(iid, force));
        case READMIT -> replyAfter(msg, () -> book.readmit(iid));
        case QUARANTINE -> quarantine(msg, iid, args.getValue("seconds"), force);
        case DRAIN -> replyAfter(msg, () -> book.drain(iid, true, force));
        case UNDRAIN -> replyAfter(msg, () -> book.drain(iid, false, force));
        case WAVE_RESTART -> waveRestart(msg);
        case RELOAD_CONFIG -> {
          vertx.eventBus().publish(Addresses.CONFIG_RELOAD, narwhal.common.bus.ClusterSeal.of(vertx).seal(Addresses.CONFIG_RELOAD,
              new JsonObject().put("at_ms", System.currentTimeMillis())));
          msg.reply(new JsonObject().put("reload", "requested on every replica"));
        }
      }
    } catch (RuntimeException e) {
      msg.fail(Failures.BAD_MESSAGE, e.getMessage());
    }
  }

  private void quarantine(Message<JsonObject> msg, String iid, Object seconds, boolean force) {
    if (!(seconds instanceof Number n)) {
      msg.fail(Failures.BAD_MESSAGE, "quarantine: seconds: " + seconds + " is not valid: expected a number > 0");
      return;
    }
    replyAfter(msg, () -> book.quarantine(iid, n.doubleValue(), force));
  }

  /**
   * Applies an admin step and replies with the state once the change is in the shared map; a step the book refuses
   * (an argument out of range, the last engine of a role without force) is a 400 naming why.
   */
  private void replyAfter(Message<JsonObject> msg, Supplier<List<BreakerAction>> step) {
    List<BreakerAction> actions;
    try {
      actions = step.get();
    } catch (IllegalArgumentException refused) {
      msg.fail(Failures.BAD_MESSAGE, refused.getMessage());
      return;
    }
    intake.step(() -> actions).onComplete(v -> reply(msg));
  }

  /** Replies with this replica's state and every replica's view (this one's alone if gathering fails). */
  private void reply(Message<JsonObject> msg) {
    JsonObject own = state.get();
    peers.gathered(own).onComplete(ar -> msg.reply(ar.succeeded() ? ar.result() : own));
  }

  /**
   * An engine this replica does not list: the command goes to a replica that lists it (its fleet file differs from
   * this one's), whose reply (with {@code forwarded_by}: this replica) or refusal is the answer; "unknown engine" only
   * when no replica lists it.
   */
  private void forward(Message<JsonObject> msg, JsonObject body, String name, String iid) {
    peers.listing(iid).onComplete(ar -> {
      if (ar.failed() || ar.result() == null) {
        msg.fail(Failures.BAD_MESSAGE, name + ": unknown engine " + iid);
        return;
      }
      DeliveryOptions options = new DeliveryOptions().setSendTimeout(FORWARD_TIMEOUT_MS).addHeader(FORWARDED, "1");
      String given = msg.headers().get("token");
      if (given != null) options.addHeader("token", given);
      vertx.eventBus().<JsonObject>request(ar.result(), body, options).onComplete(reply -> {
        if (reply.succeeded()) {
          msg.reply(reply.result().body().copy().put("forwarded_by", book.origin()));
        } else if (reply.cause() instanceof ReplyException refused && refused.failureType() == ReplyFailure.RECIPIENT_FAILURE) {
          msg.fail(refused.failureCode(), refused.getMessage());
        } else {
          msg.fail(Failures.BAD_MESSAGE, name + ": " + iid + " is listed only by replicas that did not answer: " + reply.cause().getMessage());
        }
      });
    });
  }

  private void waveRestart(Message<JsonObject> msg) {
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
      replyAfter(msg, book::waveRestarted);
    });
  }
}
