package narwhal.router;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.AsyncFile;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.json.JsonObject;

/**
 * The request journal (docs/operations.md#journal): one JSON line per finished request, appended through a Vert.x
 * {@link AsyncFile}, whose writes run off the event loop. {@link #append} may be called from any event loop: the
 * file reserves each row's position under its lock, so rows never interleave. {@link #close()} flushes what is queued.
 */
public final class Journal {
  private final AsyncFile file;

  private Journal(AsyncFile file) {
    this.file = file;
  }

  public static Future<Journal> open(Vertx vertx, String path) {
    return vertx.fileSystem().open(path, new OpenOptions().setAppend(true).setCreate(true).setWrite(true))
        .map(Journal::new);
  }

  public void append(JsonObject row) {
    file.write(Buffer.buffer(row.encode()).appendByte((byte) '\n'));
  }

  public Future<Void> close() {
    return file.flush().compose(v -> file.close());
  }
}
