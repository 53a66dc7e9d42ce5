package narwhal.breaker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.CopyOptions;
import io.vertx.core.file.FileSystem;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.EngineState;
import narwhal.common.bus.EngineStateEvent;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.logging.Logger;

/**
 * The operator decisions in force — drains, admin ejections, admin quarantines with their ends — kept in a file
 * ({@code cluster.decisions_path}) so that they survive a stop of every replica (docs/operations.md#what-the-cluster-remembers).
 * Every replica rewrites the file whenever the decisions it holds change, its own or another replica's: written whole
 * to a temporary file beside it and renamed over it (an atomic move), through Vert.x's file system (worker threads,
 * never the event loop), one write at a time, the newest content last. Breaker verdicts are not kept: after a full
 * stop the engines are checked afresh (preflight, the breaker's evidence), not judged on evidence from before. With a
 * cluster secret the file carries the {@link ClusterSeal} tag, and one whose tag does not verify is refused at start.
 */
final class DecisionFile {
  private static final Logger LOG = Logger.getLogger(DecisionFile.class.getName());
  private static final int FORMAT = 1;
  /** What the file's tag is over, besides its content (docs/operations.md#threat-model). */
  private static final String TAGGED_AS = "cluster.decisions_path";

  private final FileSystem fs;
  private final String path;
  private final String origin;
  private final ClusterSeal seal;
  private String written;
  private String pending;
  private boolean writing;

  /** @param path the file; "" keeps nothing */
  DecisionFile(Vertx vertx, String path, String origin) {
    this.fs = vertx.fileSystem();
    this.seal = ClusterSeal.of(vertx);
    this.path = path;
    this.origin = origin;
  }

  boolean enabled() {
    return !path.isEmpty();
  }

  String path() {
    return path;
  }

  /** Whether a state is an operator's decision that outlives the replicas. */
  static boolean kept(EngineStateEvent e) {
    return e.state() == EngineState.DRAINING
        || (e.state() == EngineState.EJECTED || e.state() == EngineState.QUARANTINED) && "admin".equals(e.cause());
  }

  /** The decisions the file holds (none when it does not exist yet); a file that cannot be read or parsed fails, naming it. */
  Future<List<EngineStateEvent>> read() {
    if (!enabled()) return Future.succeededFuture(List.of());
    return fs.exists(path).compose(exists -> !exists ? Future.succeededFuture(List.<EngineStateEvent>of()) : fs.readFile(path).map(buffer -> {
      List<EngineStateEvent> out = new ArrayList<>();
      JsonObject file;
      try {
        file = new JsonObject(buffer);
      } catch (RuntimeException malformed) {
        throw new IllegalStateException("cluster.decisions_path: " + path + " is not a decisions file written by Narwhal: "
            + malformed.getMessage());
      }
      if (seal.open(TAGGED_AS, "", file) == null) {
        throw new IllegalStateException("cluster.decisions_path: " + path + " does not carry this cluster's tag (cluster.name and "
            + "cluster secret): tampered with, written by another cluster, or written before the secret was set; refused. "
            + "Remove it to start from the fleet file alone");
      }
      try {
        JsonArray decisions = file.getJsonArray("decisions", new JsonArray());
        for (Object o : decisions) {
          EngineStateEvent e = o instanceof JsonObject json ? EngineStateEvent.fromJson(json) : null;
          if (e != null && kept(e)) out.add(e);
        }
      } catch (RuntimeException malformed) {
        throw new IllegalStateException("cluster.decisions_path: " + path + " is not a decisions file written by Narwhal: "
            + malformed.getMessage());
      }
      written = encode(out);
      return out;
    }));
  }

  /** Keeps {@code decisions} (the ones of them {@link #kept}) in the file, unless it already holds them. */
  void update(List<EngineStateEvent> decisions) {
    if (!enabled()) return;
    String text = encode(decisions.stream().filter(DecisionFile::kept).toList());
    if (text.equals(pending != null ? pending : written)) return;
    pending = text;
    if (!writing) writeNext();
  }

  private void writeNext() {
    String text = pending;
    pending = null;
    if (text == null || text.equals(written)) {
      writing = false;
      return;
    }
    writing = true;
    Path target = Path.of(path).toAbsolutePath();
    String temp = target.resolveSibling("." + target.getFileName() + "." + UUID.randomUUID().toString().substring(0, 8) + ".tmp").toString();
    Buffer body = Buffer.buffer(seal.seal(TAGGED_AS, "", new JsonObject().put("format", FORMAT).put("written_by", origin)
        .put("decisions", new JsonArray(text))).encodePrettily());
    fs.writeFile(temp, body)
        .compose(v -> fs.move(temp, target.toString(), new CopyOptions().setReplaceExisting(true).setAtomicMove(true)))
        .onSuccess(v -> written = text)
        .onFailure(err -> {
          LOG.warning("could not write the operator decisions to " + path + " (cluster.decisions_path): " + err.getMessage()
              + "; the next change writes them again");
          fs.delete(temp).onFailure(ignored -> { });
        })
        .onComplete(ar -> writeNext());
  }

  private static String encode(List<EngineStateEvent> decisions) {
    JsonArray out = new JsonArray();
    decisions.stream().sorted(java.util.Comparator.comparing(EngineStateEvent::iid)).forEach(e -> out.add(e.toJson()));
    return out.encode();
  }
}
