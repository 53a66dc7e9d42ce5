package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import narwhal.common.bus.ClusterView;

import java.util.List;

/**
 * {@code GET /narwhal/state} (docs/operations.md): placement's table with each engine's breaker standing and learned
 * context ({@code max_model_len}, read from {@code models} or {@code tokenize}) merged in, each model's {@code max_model_len}, and the replica's own standing (readiness, draining, in flight, retry credits,
 * restart-pending keys, cluster, its breaker's name and the config drift among the replicas, its queue and each
 * tenant's use of its quotas). A part that does not
 * answer over the bus is left empty, never an error.
 */
final class StateRoute implements Handler<RoutingContext> {
  private final Replica replica;
  private final ControlBusClient controlBus;
  private final Vertx vertx;

  StateRoute(Replica replica, ControlBusClient controlBus, Vertx vertx) {
    this.replica = replica;
    this.controlBus = controlBus;
    this.vertx = vertx;
  }

  @Override
  public void handle(RoutingContext rc) {
    Future<JsonObject> placement = controlBus.state();
    Future<JsonObject> breaker = controlBus.breakerState();
    Future.join(placement, breaker).onComplete(ar -> {
      JsonObject p = placement.succeeded() ? placement.result() : new JsonObject();
      JsonObject b = breaker.succeeded() ? breaker.result() : new JsonObject();
      JsonArray engines = p.getJsonArray("engines", new JsonArray());
      for (Object o : engines) {
        JsonObject engine = (JsonObject) o;
        EngineFacts.Context context = replica.facts().context(engine.getString("iid"));
        engine.put("max_model_len", context == null ? null : context.maxModelLen())
            .put("max_model_len_from", context == null ? null : context.from());
        b.getJsonArray("engines", new JsonArray()).stream().map(JsonObject.class::cast)
            .filter(e -> engine.getString("iid").equals(e.getString("iid"))).findFirst()
            .ifPresent(e -> engine.put("cause", e.getString("cause")).put("streaks", e.getJsonObject("streaks"))
                .put("last_probe", e.getString("last_probe")).put("next_probe_ms", e.getValue("next_probe_ms"))
                .put("backoff", e.getValue("backoff")).put("quarantine_until_ms", e.getValue("quarantine_until_ms")));
      }
      JsonObject models = p.getJsonObject("models");
      if (models != null) {
        models.fieldNames().forEach(m -> models.getJsonObject(m)
            .put("max_model_len", replica.facts().smallestContext(BaseModels.enginesOf(replica.config().get(), m))));
      }
      Admission admission = replica.admission();
      rc.json(new JsonObject().put("model", replica.config().get().model()).put("models", models).put("engines", engines)
          .put("ready", p.getBoolean("ready", false) && !admission.draining() && ClusterView.of(vertx).refusal() == null)
          .put("draining", admission.draining()).put("in_flight", admission.inFlight()).put("fleet_hold", b.getBoolean("fleet_hold", false))
          .put("shared_state", b.getString("shared_state", "closed"))
          .put("replica", b.getString("replica")).put("member", b.getString("member"))
          .put("config_drift", b.getJsonObject("config_drift")).put("replicas", b.getJsonArray("replicas"))
          .put("placement", p.getJsonObject("placement"))
          .put("restart_pending", new JsonArray(List.copyOf(replica.restartPending().get())))
          .put("reservations", p.getInteger("reservations", 0)).put("retry_credits", replica.retryBudget().credits())
          .put("handoffs_left", replica.metrics().handoffsLeft())
          .put("cluster_members", new JsonArray(List.copyOf(replica.members().get())))
          .put("cluster", ClusterView.of(vertx).toJson())
          .put("discovery", narwhal.common.bus.DiscoveryStatus.of(vertx).toJson())
          .put("flow", narwhal.common.bus.FlowStatus.of(vertx)));
    });
  }
}
