package narwhal.breaker;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
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
 * once the change is cluster state; a wave restart first validates the whole fleet.
 */
final class AdminHandler {
  private final Vertx vertx;
  private final BreakerBook book;
  private final OutcomeIntake intake;
  private final ProbeScheduler probes;
  private final BreakerMetrics metrics;
  private final Supplier<String> token;
  private final Supplier<JsonObject> state;

  /** @param token the configured admin token, or null when none is set */
  AdminHandler(Vertx vertx, BreakerBook book, OutcomeIntake intake, ProbeScheduler probes, BreakerMetrics metrics,
               Supplier<String> token, Supplier<JsonObject> state) {
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
      msg.fail(Failures.BAD_MESSAGE, name + ": unknown engine " + iid);
      return;
    }
    boolean force = Boolean.TRUE.equals(args.getValue("force"));
    try {
      switch (command) {
        case STATE -> msg.reply(state.get());
        case EJECT -> replyAfter(msg, () -> book.eject(iid, force));
        case READMIT -> replyAfter(msg, () -> book.readmit(iid));
        case QUARANTINE -> quarantine(msg, iid, args.getValue("seconds"), force);
        case DRAIN -> replyAfter(msg, () -> book.drain(iid, true, force));
        case UNDRAIN -> replyAfter(msg, () -> book.drain(iid, false, force));
        case WAVE_RESTART -> waveRestart(msg);
        case RELOAD_CONFIG -> {
          vertx.eventBus().publish(Addresses.CONFIG_RELOAD, new JsonObject());
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
    intake.step(() -> actions).onComplete(v -> msg.reply(state.get()));
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
