package narwhal.sim;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Command line: runs one simulated engine or a fleet until the process is killed, and prints one
 * JSON line per engine (name, role, url, side channel, engine id).
 *
 * <pre>
 * sim [--engines N] [--roles prefill,decode,...] [--port BASE] [--host H] [--model M]
 *     [--kv-lease-seconds S] [--fault-policy recompute|fail] [--config engines.json]
 * </pre>
 * With {@code --port BASE}, engine i listens on BASE+i and its side channel on BASE+100+i;
 * without it every port is random. {@code --config} is a JSON array of {@link SimEngineOptions}.
 */
public final class SimMain {

  private SimMain() {
  }

  public static void main(String[] args) throws IOException {
    List<SimEngineOptions> engines;
    try {
      engines = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("sim: " + e.getMessage());
      System.exit(2);
      return;
    }
    Vertx vertx = Vertx.vertx();
    SimFleet.start(vertx, engines)
      .onSuccess(fleet -> fleet.describe().forEach(line -> System.out.println(((JsonObject) line).encode())))
      .onFailure(err -> {
        System.err.println("sim: could not start: " + err.getMessage());
        vertx.close().onComplete(v -> System.exit(1));
      });
  }

  static List<SimEngineOptions> parse(String[] args) throws IOException {
    int count = 1;
    String[] roles = null;
    int basePort = 0;
    JsonObject common = new JsonObject();
    JsonArray config = null;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      String value = i + 1 < args.length ? args[i + 1] : null;
      if (value == null) {
        throw new IllegalArgumentException("missing value after " + flag);
      }
      i++;
      switch (flag) {
        case "--engines" -> count = Integer.parseInt(value);
        case "--roles" -> roles = value.split(",");
        case "--port" -> basePort = Integer.parseInt(value);
        case "--host" -> common.put("host", value);
        case "--model" -> common.put("model", value);
        case "--kv-lease-seconds" -> common.put("kvLeaseSeconds", Long.parseLong(value));
        case "--fault-policy" -> common.put("kvLoadFailurePolicy", value);
        case "--config" -> config = new JsonArray(Files.readString(Path.of(value)));
        default -> throw new IllegalArgumentException("unknown option " + flag);
      }
    }
    List<SimEngineOptions> out = new ArrayList<>();
    if (config != null) {
      config.forEach(o -> out.add(new SimEngineOptions(common.copy().mergeIn((JsonObject) o)).validate()));
      return out;
    }
    if (roles != null && roles.length != count) {
      if (count == 1) {
        count = roles.length;
      } else {
        throw new IllegalArgumentException("--roles lists " + roles.length + " roles for " + count + " engines");
      }
    }
    for (int i = 0; i < count; i++) {
      String role = roles == null ? "both" : roles[i].trim();
      SimEngineOptions options = new SimEngineOptions(common.copy())
        .setName(role + "-" + i)
        .setRole(role);
      if (basePort > 0) {
        options.setPort(basePort + i).setSideChannelPort(basePort + 100 + i);
      }
      out.add(options.validate());
    }
    return out;
  }
}
