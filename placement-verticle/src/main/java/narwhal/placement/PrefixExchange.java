package narwhal.placement;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.Failures;
import narwhal.common.bus.PrefixSnapshot;
import narwhal.common.bus.PrefixesPlaced;

import java.util.logging.Logger;

/**
 * Keeps the replicas' prefix indexes in agreement (docs/operations.md#placement): every {@link #PERIOD_MS} this
 * replica publishes the prefixes it placed since ({@link PrefixesPlaced} on {@link Addresses#PLACEMENT_PREFIXES}) and
 * learns the other replicas'. A prompt's prefix is then sent where its blocks are cached whichever replica the
 * balancer picks. Fire-and-forget on the event bus; nothing waits on the shared-state map. A replica that missed the
 * exchanges (starting, or back from a frozen or cut-off spell) asks one peer for its whole index
 * ({@link PrefixSnapshot} on {@link Addresses#PLACEMENT_SNAPSHOT}, {@link #CHUNK} prefixes a message) and learns
 * what it does not know, for at most {@link #SNAPSHOT_TIMEOUT_MS}; without an answer it goes on without.
 */
final class PrefixExchange {
  static final long PERIOD_MS = 50;
  /** Prefixes per snapshot message: about 100 KB of JSON, encoded or learned in well under a millisecond. */
  static final int CHUNK = 1_024;
  /** How long a snapshot may take in all (a start waits for it at most this long); each chunk, too. */
  static final long SNAPSHOT_TIMEOUT_MS = 2_000;
  /**
   * Requests per snapshot: the bus picks members in turn, and may pick this replica, or a peer that does not answer (a
   * paused one), first; each ask waits a share of the bound, so a silent peer costs one share, not the whole snapshot.
   */
  private static final int ASKS = 4;
  private static final Logger LOG = Logger.getLogger(PrefixExchange.class.getName());

  private final Vertx vertx;
  private final PlacementTable table;
  private final String replica;
  private MessageConsumer<Object> consumer;
  private MessageConsumer<Object> snapshots;
  private long timer = -1;
  /** The last snapshot this replica took, for {@code /narwhal/state}; null before the first. */
  private JsonObject last;

  PrefixExchange(Vertx vertx, PlacementTable table, String replica) {
    this.vertx = vertx;
    this.table = table;
    this.replica = replica;
  }

  /**
   * Starts publishing and learning, takes a snapshot from a peer, then answers peers' requests; a replica outside a cluster has no
   * one to tell and does none of it. Never fails for want of a snapshot.
   */
  Future<Void> start() {
    if (!vertx.isClustered()) return Future.succeededFuture();
    // typed Object: a body that is not a JSON object (a string, a buffer) is no message, not a ClassCastException
    consumer = vertx.eventBus().<Object>consumer(Addresses.PLACEMENT_PREFIXES, msg -> {
      JsonObject json = ClusterSeal.of(vertx).open(Addresses.PLACEMENT_PREFIXES, msg.body());
      PrefixesPlaced placed = json == null ? null : PrefixesPlaced.fromJson(json);
      if (placed != null && !replica.equals(placed.origin())) table.learnPrefixes(placed);
    });
    return consumer.completion()
        .onSuccess(v -> timer = vertx.setPeriodic(PERIOD_MS, t -> publish()))
        .compose(v -> snapshot("start"))
        .compose(v -> answering());
  }

  /**
   * Starts answering peers' snapshot requests: only once this replica's own snapshot at start is taken, so the bus
   * cannot hand that request to this replica itself. It did, and a starting replica's loop, busy with its first
   * readings, answered itself too late: its ask's share of the bound passed, often the whole snapshot's two seconds
   * (a joining replica in front of 1,000 engines: {@code timeout} in most starts, two seconds before it was ready).
   * A replica alone finds no one to ask at once ({@code no_peer}).
   */
  private Future<Void> answering() {
    snapshots = vertx.eventBus().consumer(Addresses.PLACEMENT_SNAPSHOT, this::answer);
    return snapshots.completion();
  }

  void stop() {
    vertx.cancelTimer(timer);
    if (consumer != null) consumer.unregister();
    if (snapshots != null) snapshots.unregister();
  }

  /**
   * Takes a peer's index ({@code on}: {@code start}, or {@code rejoin} when the replica is back on the cluster's view):
   * completes when the last chunk is learned, or the peer failed or did not answer within {@link #SNAPSHOT_TIMEOUT_MS};
   * never fails. One at a time.
   */
  Future<Void> snapshot(String on) {
    if (consumer == null || last != null && "fetching".equals(last.getString("outcome"))) return Future.succeededFuture();
    JsonObject taking = new JsonObject().put("on", on).put("outcome", "fetching").put("offered", 0).put("learned", 0);
    last = taking;
    Promise<Void> done = Promise.promise();
    long bound = vertx.setTimer(SNAPSHOT_TIMEOUT_MS, t -> end(taking, "timeout", null, done));
    ask(taking, ASKS, done);
    return done.future().onComplete(v -> vertx.cancelTimer(bound));
  }

  /** The last snapshot: {@code {on, outcome, peer?, offered, learned, error?}}; null outside a cluster. */
  JsonObject view() {
    return last == null ? null : last.copy();
  }

  private void ask(JsonObject taking, int asks, Promise<Void> done) {
    DeliveryOptions share = new DeliveryOptions().setSendTimeout(SNAPSHOT_TIMEOUT_MS / ASKS);
    vertx.eventBus().<JsonObject>request(Addresses.PLACEMENT_SNAPSHOT, seal(new JsonObject().put("origin", replica)), share)
        .onSuccess(chunk -> take(taking, chunk, done))
        .onFailure(err -> {
          boolean own = err instanceof ReplyException r && r.failureCode() == Failures.OWN_REPLICA;
          boolean silent = err instanceof ReplyException r && r.failureType() == ReplyFailure.TIMEOUT;
          if ((own || silent) && asks > 1) {
            if (silent) taking.put("silent", taking.getInteger("silent", 0) + 1);
            ask(taking, asks - 1, done);
          } else if (silent || own && taking.containsKey("silent")) {
            end(taking, "timeout", null, done);
          } else if (own || err instanceof ReplyException r && r.failureType() == ReplyFailure.NO_HANDLERS) {
            end(taking, "no_peer", null, done);
          } else {
            failed(taking, err, done);
          }
        });
  }

  /** Learns one chunk and, when more follow and the bound has not passed, asks for the next by replying to it. */
  private void take(JsonObject taking, Message<JsonObject> message, Promise<Void> done) {
    if (done.future().isComplete()) return;
    JsonObject body = ClusterSeal.of(vertx).open(Addresses.PLACEMENT_SNAPSHOT, message.body());
    PrefixSnapshot chunk = body == null ? null : PrefixSnapshot.fromJson(body);
    if (chunk == null) {
      end(taking, "failed", body == null ? "a chunk whose tag does not verify with the cluster secret" : "a chunk without an origin", done);
      return;
    }
    taking.put("peer", chunk.origin()).put("offered", taking.getInteger("offered") + chunk.prefixes().size())
        .put("learned", taking.getInteger("learned") + table.learnSnapshot(chunk));
    if (!chunk.more()) {
      end(taking, "learned", null, done);
      return;
    }
    message.<JsonObject>replyAndRequest(seal(new JsonObject()), chunkTimeout())
        .onSuccess(next -> take(taking, next, done))
        .onFailure(err -> failed(taking, err, done));
  }

  private void failed(JsonObject taking, Throwable err, Promise<Void> done) {
    if (err instanceof ReplyException r && r.failureType() == ReplyFailure.TIMEOUT) {
      end(taking, "timeout", null, done);
    } else {
      end(taking, "failed", err.getMessage(), done);
    }
  }

  private void end(JsonObject taking, String outcome, String error, Promise<Void> done) {
    if (done.future().isComplete()) return;
    taking.put("outcome", outcome);
    if (error != null) taking.put("error", error);
    LOG.info(() -> "prefix snapshot at " + taking.getString("on") + ": " + outcome + (error == null ? "" : " (" + error + ")")
        + (taking.containsKey("peer") ? " from " + taking.getString("peer") : "") + "; " + taking.getInteger("learned")
        + " of " + taking.getInteger("offered") + " prefixes offered taken into the index");
    done.complete();
  }

  /** A peer's request: this replica's index, copied at once and sent {@link #CHUNK} prefixes at a time. */
  private void answer(Message<Object> request) {
    JsonObject body = ClusterSeal.of(vertx).open(Addresses.PLACEMENT_SNAPSHOT, request.body());
    if (body == null || !(body.getValue("origin") instanceof String origin)) {
      request.fail(Failures.BAD_MESSAGE, "BAD_MESSAGE: a snapshot request is {\"origin\": replica}");
    } else if (replica.equals(origin)) {
      request.fail(Failures.OWN_REPLICA, "OWN_REPLICA: a replica does not take its own snapshot");
    } else {
      send(request, table.prefixSnapshot(replica), 0);
    }
  }

  private void send(Message<?> asked, PrefixSnapshot index, int from) {
    int to = Math.min(index.prefixes().size(), from + CHUNK);
    boolean more = to < index.prefixes().size();
    JsonObject chunk = seal(new PrefixSnapshot(replica, index.prefixes().subList(from, to), index.urls(), more).toJson());
    if (more) {
      asked.replyAndRequest(chunk, chunkTimeout()).onSuccess(next -> send(next, index, to));
    } else {
      asked.reply(chunk);
    }
  }

  private static DeliveryOptions chunkTimeout() {
    return new DeliveryOptions().setSendTimeout(SNAPSHOT_TIMEOUT_MS);
  }

  private void publish() {
    PrefixesPlaced placed = table.drainPrefixes(replica);
    if (!placed.placed().isEmpty()) {
      vertx.eventBus().publish(Addresses.PLACEMENT_PREFIXES, ClusterSeal.of(vertx).seal(Addresses.PLACEMENT_PREFIXES, placed.toJson()));
    }
  }

  /** A snapshot request, chunk or ask for the next one, tagged for {@link Addresses#PLACEMENT_SNAPSHOT}. */
  private JsonObject seal(JsonObject body) {
    return ClusterSeal.of(vertx).seal(Addresses.PLACEMENT_SNAPSHOT, body);
  }
}
