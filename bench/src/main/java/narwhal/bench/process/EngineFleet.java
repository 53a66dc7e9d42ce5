package narwhal.bench.process;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.nio.file.Path;
import java.util.List;

/** Simulated engines a scenario drives, wherever they run: their URLs by role, and a fleet file for a router. */
public interface EngineFleet extends AutoCloseable {
  /** One engine: its iid, role and base URL. */
  record Engine(String name, String role, String url) {
    public int port() {
      return Integer.parseInt(url.substring(url.lastIndexOf(':') + 1));
    }
  }

  List<Engine> list();

  default List<String> urls(String role) {
    return list().stream().filter(e -> e.role().equals(role)).map(Engine::url).toList();
  }

  /** A fleet file for a router in front of these engines, listening on {@code port} (0: any). */
  default JsonObject fleetFile(Path journal, int port) {
    JsonArray engines = new JsonArray();
    list().forEach(e -> engines.add(new JsonObject().put("iid", e.name()).put("url", e.url()).put("role", e.role())));
    return new JsonObject().put("schema", "narwhal.fleet").put("schema_version", 1).put("model", SimBench.MODEL).put("engines", engines)
        .put("server", new JsonObject().put("host", "127.0.0.1").put("port", port))
        .put("journal", new JsonObject().put("path", journal.toAbsolutePath().toString()));
  }

  @Override
  void close();
}
