package narwhal.launcher;

import com.hazelcast.partition.NoDataMemberInClusterException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import narwhal.common.bus.Addresses;
import narwhal.common.bus.AdminCommand;
import narwhal.common.bus.AdminProof;
import narwhal.common.bus.ClusterSeal;
import narwhal.common.bus.ClusterSecret;
import narwhal.common.config.AdminConfig;
import narwhal.common.config.NarwhalConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.UnaryOperator;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@code narwhal admin}: joins the cluster named by the fleet file as a Hazelcast lite member (no partitions, no
 * state), sends one admin message ({@code {"command", "args"}} with an {@link AdminProof} of the token from the
 * environment variable named by {@code admin.token_env}, never the token) to {@code narwhal.admin}, believes the reply
 * only when it verifies with the cluster secret and the token ({@link #distrust}), prints it, leaves
 * (docs/operations.md#admin-commands).
 * With {@code --url} it posts the command to a replica's admin endpoint on its health port instead (the token as
 * {@code Authorization: Bearer}; no cluster join). It reads only the fleet file's {@code cluster} and {@code admin}
 * sections, so it works while the rest is invalid. An engine command is {@code done} only when the reply shows its
 * effect in the shared state. Exit status: 0 done, 1 refused (bad arguments, or by the cluster: the failure code and
 * message are printed, 401 for a missing or wrong token), 2 could not ask (unreadable fleet file, no replica
 * answering), 3 carried out but its effect not seen (what was seen is printed).
 */
@Command(name = "admin", mixinStandardHelpOptions = true,
    description = "Send one admin command to the router cluster and print the reply.",
    footer = {"", "Commands: state, eject IID [--force], readmit IID, quarantine IID --seconds S [--force], drain IID [--force], "
        + "undrain IID, wave-restart, reload-config.",
        "Exit status: 0 done, 1 refused (bad arguments, or e.g. 401 wrong token), 2 could not ask, 3 carried out but its effect not seen."})
final class AdminCli implements Callable<Integer> {
  static final List<String> COMMANDS = AdminCommand.wireNames();
  /** The path of the admin endpoint on a replica's health port. */
  static final String ENDPOINT_PATH = "/narwhal/admin";
  /** Time allowed to join the cluster on top of {@code --timeout}, the bound of the whole command. */
  static final long JOIN_GRACE_MS = 10_000;
  /** The longest quarantine the breaker takes (a year). */
  static final double MAX_QUARANTINE_S = 365 * 24 * 3600.0;
  /** Kept so the quieter levels set for the command line are not collected away. */
  private static final List<Logger> QUIETED = new ArrayList<>();

  @Parameters(index = "0", paramLabel = "COMMAND", description = "one of: ${COMPLETION-CANDIDATES}",
      completionCandidates = Commands.class)
  String command;

  @Parameters(index = "1", arity = "0..1", paramLabel = "IID", description = "the engine, for commands about one engine")
  String iid;

  @Option(names = "--seconds", description = "how long a quarantine lasts")
  Double seconds;

  @Mixin
  FleetFile fleetFile = new FleetFile();

  @Option(names = "--force", description = "eject, quarantine or drain even the last serving engine of a phase")
  boolean force;

  @Option(names = "--json", description = "print the reply as JSON")
  boolean json;

  @Option(names = "--url", paramLabel = "URL", description = "a replica's health port, e.g. http://127.0.0.1:8081 "
      + "(kubectl port-forward): post the command to its admin endpoint instead of joining the cluster")
  String url;

  @Option(names = "--timeout", defaultValue = "30", description = "seconds to wait for the reply (default: ${DEFAULT-VALUE})")
  double timeoutS;

  @Spec
  CommandSpec spec;

  /** Reads environment variables (the admin token, the cluster TLS password); tests replace it. */
  UnaryOperator<String> env = System::getenv;

  static final class Commands extends ArrayList<String> {
    Commands() {
      super(COMMANDS);
    }
  }

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    JsonObject args;
    NarwhalConfig.AdminView config;
    try {
      args = args();
    } catch (CommandFailure e) {
      err.println("narwhal admin: " + e.getMessage());
      return 1;
    }
    URI endpoint = null;
    if (url != null) {
      try {
        endpoint = endpoint(url);
      } catch (CommandFailure e) {
        err.println("narwhal admin: " + e.getMessage());
        return 1;
      }
    }
    try {
      config = endpoint != null && !Files.exists(fleetFile.fleet)
          ? new NarwhalConfig.AdminView(narwhal.common.config.ClusterConfig.defaults(), AdminConfig.defaults())
          : fleetFile.loadAdminView();
    } catch (CommandFailure e) {
      err.println("narwhal admin: " + e.getMessage());
      return 2;
    }
    if (endpoint != null) return post(endpoint, config, args, out, err);
    quietLogs();
    NarwhalConfig.AdminView view = config;
    java.util.concurrent.CompletableFuture<Integer> asked = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> ask(view, args, out, err), runnable -> {
          Thread t = new Thread(runnable, "narwhal-admin");
          t.setDaemon(true);
          t.start();
        });
    try {
      return asked.get((long) (timeoutS * 1000) + JOIN_GRACE_MS, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      err.println("narwhal admin: no answer within " + timeoutS + " s (joining cluster \"" + config.cluster().name()
          + "\" or waiting for a reply; a replica may be frozen or unreachable)");
      return 2;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 2;
    } catch (java.util.concurrent.ExecutionException e) {
      err.println("narwhal admin: " + e.getCause().getMessage());
      return 2;
    }
  }

  /** Joins, sends, prints; the exit status. Bounded by the caller ({@code --timeout} plus the join's grace). */
  private int ask(NarwhalConfig.AdminView config, JsonObject args, PrintWriter out, PrintWriter err) {
    String token = adminToken(config);
    ClusterSeal seal;
    try {
      seal = new ClusterSeal(config.cluster().name(), ClusterSecret.load(config.cluster(), env), "narwhal-admin", where -> { });
    } catch (IllegalArgumentException e) {
      err.println("narwhal admin: " + e.getMessage());
      return 2;
    }
    HazelcastClusterManager manager = ClusterBootstrap.clusterManager(config.cluster(), true);
    Vertx vertx;
    try {
      vertx = ClusterBootstrap.start(new VertxOptions(), null, config.cluster(), manager, env).toCompletionStage()
          .toCompletableFuture().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 2;
    } catch (java.util.concurrent.ExecutionException e) {
      err.println("narwhal admin: " + joinFailure(config, e.getCause()));
      return 2;
    }
    try {
      JsonObject body = AdminProof.body(token, command, args, System.currentTimeMillis());
      JsonObject reply = await(send(vertx, body, (long) (timeoutS * 1000)));
      String distrust = distrust(reply, body, token, seal);
      if (distrust != null) {
        err.println("narwhal admin: " + command + (iid == null ? "" : " " + iid) + ": not believed: " + distrust);
        return 2;
      }
      return print(reply, out, err);
    } catch (ReplyException e) {
      return refused(e, config, token, out, err);
    } finally {
      out.flush();
      try {
        Blocking.await(vertx.close());
      } catch (CommandFailure ignored) {
        // leaving is best effort; the cluster notices a lost member anyway
      }
    }
  }

  /**
   * Prints a reply the command believes; the exit status. An engine command is done only when its {@code effect}
   * shows the state it asked for in the shared state; otherwise what was seen goes to stderr and the status is 3.
   */
  private int print(JsonObject reply, PrintWriter out, PrintWriter err) {
    JsonObject shown = AdminProof.unsigned(reply);
    shown.remove("error");
    JsonObject effect = shown.getJsonObject("effect");
    boolean engineCommand = AdminCommand.parse(command).map(AdminCommand::aboutEngine).orElse(false);
    boolean done = !engineCommand || effect != null && effect.getBoolean("done", false);
    if (json) {
      out.println(shown.encodePrettily());
    } else if (shown.containsKey("reload")) {
      out.println(command + ": " + shown.getString("reload"));
    } else {
      if (!"state".equals(command) && done) out.println(command + (iid == null ? "" : " " + iid) + ": done");
      out.print(table(shown));
    }
    if (done) return 0;
    err.println("narwhal admin: " + command + " " + iid + ": " + (effect == null
        ? "not done: the reply does not say what the shared state shows (a replica older than this command?)"
        : "not done: asked " + effect.getString("iid") + " " + effect.getString("asked") + ", the shared state shows "
          + effect.getString("seen")));
    return 3;
  }

  /** {@code --url} as the admin endpoint's address: {@value #ENDPOINT_PATH} added unless it is there. */
  static URI endpoint(String url) {
    URI uri;
    try {
      uri = new URI(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
    } catch (java.net.URISyntaxException e) {
      throw new CommandFailure("--url: " + url + " is not a URL: expected http://host:port, e.g. http://127.0.0.1:8081");
    }
    if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
      throw new CommandFailure("--url: " + url + " is not valid: expected http://host:port of a replica's server.health_port, "
          + "e.g. http://127.0.0.1:8081");
    }
    String path = uri.getPath() == null ? "" : uri.getPath();
    return URI.create(uri.getScheme() + "://" + uri.getRawAuthority() + (path.endsWith(ENDPOINT_PATH) ? path : path + ENDPOINT_PATH));
  }

  /** Posts the command to a replica's admin endpoint and prints the answer; the exit status. */
  private int post(URI endpoint, NarwhalConfig.AdminView config, JsonObject args, PrintWriter out, PrintWriter err) {
    String token = adminToken(config);
    HttpRequest.Builder request = HttpRequest.newBuilder(endpoint).timeout(java.time.Duration.ofMillis((long) (timeoutS * 1000)))
        .header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("command", command).put("args", args).encode()));
    if (token != null && !token.isEmpty()) request.header("authorization", "Bearer " + token);
    HttpResponse<String> response;
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(java.time.Duration.ofMillis((long) (timeoutS * 1000))).build();
    try {
      response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    } catch (java.net.http.HttpTimeoutException e) {
      err.println("narwhal admin: no answer from " + endpoint + " within " + timeoutS + " s");
      return 2;
    } catch (java.io.IOException e) {
      err.println("narwhal admin: cannot reach " + endpoint + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage())
          + " (is it a replica's server.health_port? through Kubernetes: kubectl port-forward pod/<replica> 8081)");
      return 2;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 2;
    } finally {
      out.flush();
    }
    JsonObject body;
    try {
      body = new JsonObject(response.body());
    } catch (RuntimeException e) {
      err.println("narwhal admin: " + endpoint + " answered " + response.statusCode() + " with no admin reply (is it a replica's "
          + "server.health_port, and the replica this version or later?)");
      return 2;
    }
    JsonObject error = body.getValue("error") instanceof JsonObject e ? e : null;
    int status = response.statusCode();
    if (status == 200 || status == 409 && body.containsKey("effect")) {
      int exit = print(body, out, err);
      out.flush();
      return exit;
    }
    String message = error == null ? "HTTP " + status : error.getString("message", "HTTP " + status);
    if (json) out.println(new JsonObject().put("error", new JsonObject().put("code", status).put("message", message)).encodePrettily());
    out.flush();
    if (status >= 400 && status < 500 && status != 404) {
      String hint = status == 401 && (token == null || token.isEmpty()) ? unsetHint(config) : "";
      err.println("narwhal admin: refused (" + status + "): " + message + hint);
      return 1;
    }
    err.println("narwhal admin: " + endpoint + " answered " + status + ": " + message);
    return 2;
  }

  /**
   * Why joining failed, in the operator's terms. Found alone — no replica reachable at the configured members — the
   * lite member cannot even register on the event bus: Hazelcast fails with {@link NoDataMemberInClusterException}
   * ("Partition owner is null…"), which says nothing about replicas.
   */
  static String joinFailure(NarwhalConfig.AdminView config, Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof NoDataMemberInClusterException) {
        String where = config.cluster().discovery() == narwhal.common.config.ClusterConfig.Discovery.KUBERNETES
            ? "behind Kubernetes service " + config.cluster().kubernetes().serviceName() + " (cluster.kubernetes)"
            : "at " + config.cluster().members() + " (cluster.members)";
        List<String> answering = config.cluster().discovery() == narwhal.common.config.ClusterConfig.Discovery.KUBERNETES
            ? List.of() : listening(config.cluster());
        if (!answering.isEmpty()) {
          return "the replicas of cluster \"" + config.cluster().name() + "\" at " + answering + " accept connections but did not admit "
              + "this command as a member: a frozen or unreachable replica stops the cluster admitting anyone until the others "
              + "expel it (hazelcast.max.no.heartbeat.seconds, 15 s); try again in a few seconds";
        }
        return "no router replica of cluster \"" + config.cluster().name() + "\" is reachable " + where + ": start a replica (narwhal serve --cluster) or check the addresses; the admin command joins as "
            + "a lite member, which holds no cluster state and needs a running replica to answer";
      }
    }
    return "cannot join cluster \"" + config.cluster().name() + "\": " + cause.getMessage();
  }

  /** The configured members (host, or host:port with cluster.port by default) that accept a TCP connection now. */
  static List<String> listening(narwhal.common.config.ClusterConfig cluster) {
    List<String> found = new ArrayList<>();
    for (String member : cluster.members()) {
      int colon = member.lastIndexOf(':');
      String host = colon > 0 ? member.substring(0, colon) : member;
      int port;
      try {
        port = colon > 0 ? Integer.parseInt(member.substring(colon + 1)) : cluster.port();
      } catch (NumberFormatException e) {
        continue;
      }
      try (java.net.Socket socket = new java.net.Socket()) {
        socket.connect(new java.net.InetSocketAddress(host, port), 500);
        found.add(host + ":" + port);
      } catch (java.io.IOException | IllegalArgumentException e) {
        // not listening (or not resolvable): not a replica that answers
      }
    }
    return found;
  }

  /** The admin command documents bad arguments, a parse error included, as exit 1 ("refused"); 2 is "could not ask". */
  static CommandLine badArgumentsExitOne(CommandLine admin) {
    return admin.setParameterExceptionHandler((ex, args) -> {
      ex.getCommandLine().getErr().println("narwhal admin: " + ex.getMessage());
      ex.getCommandLine().usage(ex.getCommandLine().getErr());
      return 1;
    });
  }

  private JsonObject args() {
    AdminCommand parsed = AdminCommand.parse(command).orElseThrow(() ->
        new CommandFailure("\"" + command + "\" is not a command: expected one of " + String.join(", ", COMMANDS)));
    JsonObject args = new JsonObject();
    if (parsed.aboutEngine()) {
      if (iid == null) throw new CommandFailure(command + " needs the engine's iid, e.g. narwhal admin " + command + " D0");
      args.put("iid", iid);
    } else if (iid != null) {
      throw new CommandFailure(command + " takes no engine (got " + iid + ")");
    }
    if (!(timeoutS > 0) || timeoutS > 3600) throw new CommandFailure("--timeout needs seconds with 0 < S <= 3600");
    if (force) {
      if (parsed != AdminCommand.EJECT && parsed != AdminCommand.QUARANTINE && parsed != AdminCommand.DRAIN) {
        throw new CommandFailure("--force applies to eject, quarantine and drain only");
      }
      args.put("force", true);
    }
    if (parsed == AdminCommand.QUARANTINE) {
      if (seconds == null || !(seconds >= 0.001) || seconds > MAX_QUARANTINE_S) {
        throw new CommandFailure("quarantine needs --seconds S with 0.001 <= S <= " + (long) MAX_QUARANTINE_S + " (a year)");
      }
      args.put("seconds", seconds);
    } else if (seconds != null) {
      throw new CommandFailure("--seconds applies to quarantine only");
    }
    return args;
  }

  private int refused(ReplyException e, NarwhalConfig.AdminView config, String token, PrintWriter out, PrintWriter err) {
    if (e.failureType() == ReplyFailure.RECIPIENT_FAILURE) {
      if (json) {
        out.println(new JsonObject().put("error", new JsonObject().put("code", e.failureCode()).put("message", e.getMessage()))
            .encodePrettily());
      }
      String hint = e.failureCode() == 401 && token == null ? unsetHint(config) : "";
      err.println("narwhal admin: refused (" + e.failureCode() + "): " + e.getMessage() + hint);
      return 1;
    }
    err.println(e.failureType() == ReplyFailure.NO_HANDLERS
        ? "narwhal admin: no router replica answers on " + Addresses.ADMIN + " in cluster \"" + config.cluster().name()
          + "\" (members " + config.cluster().members() + "; are the replicas running with --cluster?)"
        : "narwhal admin: no reply within " + timeoutS + " s");
    return 2;
  }

  /**
   * Why a reply from the bus is not believed, or null: with a cluster secret it must carry the seal of a replica for
   * this command's nonce; with a token, the token's mac for the nonce. Anyone can answer on the bus (a member without
   * the secret may have registered a handler on {@code narwhal.admin}); only a replica holds the secret and the token.
   */
  static String distrust(JsonObject reply, JsonObject body, String token, ClusterSeal seal) {
    JsonObject proof = body.getJsonObject(AdminProof.FIELD);
    String nonce = proof == null ? "" : proof.getString("nonce");
    String claimed = " (it claims to come from replica " + reply.getValue("replica") + ": either a member without the cluster "
        + "secret answers on " + Addresses.ADMIN + ", see narwhal_cluster_unverified_members, or the replicas run with another "
        + "cluster secret or admin token than this command); nothing is known to have changed";
    if (seal.enabled() && seal.open(Addresses.ADMIN, nonce, reply) == null) {
      return "the reply does not verify with the cluster secret (cluster.secret_file)" + claimed;
    }
    if (proof != null && !AdminProof.replyVerifies(token, nonce, reply)) {
      return "the reply does not verify with the admin token" + claimed;
    }
    return null;
  }

  /**
   * Sends one admin message: the command with a proof of the token, never the token. A member that has just joined
   * may not see the replicas' consumers yet, so "no handlers" is retried for a few seconds.
   */
  static Future<JsonObject> send(Vertx vertx, JsonObject body, long timeoutMs) {
    return attempt(vertx, body, new DeliveryOptions().setSendTimeout(timeoutMs), 30);
  }

  private static Future<JsonObject> attempt(Vertx vertx, JsonObject body, DeliveryOptions options, int triesLeft) {
    return vertx.eventBus().<JsonObject>request(Addresses.ADMIN, body, options).map(msg -> msg.body()).recover(err -> {
      if (!(err instanceof ReplyException r) || r.failureType() != ReplyFailure.NO_HANDLERS || triesLeft <= 1) {
        return Future.failedFuture(err);
      }
      Promise<Void> later = Promise.promise();
      vertx.setTimer(100, t -> later.complete());
      return later.future().compose(v -> attempt(vertx, body, options, triesLeft - 1));
    });
  }

  private static JsonObject await(Future<JsonObject> reply) {
    try {
      return reply.toCompletionStage().toCompletableFuture().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CommandFailure("interrupted");
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof ReplyException r) throw r;
      throw new CommandFailure(String.valueOf(e.getCause()));
    }
  }

  /**
   * The breaker state reply as a table: one line per engine of the answering replica; then, when the replicas' views
   * differ (an engine one fleet file lists and another does not, a state not yet everywhere, a replica not answering),
   * a column per replica for each engine on which they differ; then the config drift, if any.
   */
  static String table(JsonObject reply) {
    StringBuilder s = new StringBuilder();
    JsonArray replicas = reply.getJsonArray("replicas", new JsonArray());
    String member = reply.getString("member");
    s.append("replica ").append(reply.getString("replica", "?")).append(member == null ? "" : " (" + member + ")")
        .append(" answered; fleet hold: ").append(reply.getBoolean("fleet_hold", false) ? "ON" : "off");
    String differ = differences(replicas);
    if (replicas.size() > 1) s.append("; ").append(replicas.size()).append(differ.isEmpty() ? " replicas agree" : " replicas, views differ (below)");
    s.append('\n');
    String format = "%-8s %-12s %-18s %-26s %-22s %s%n";
    s.append(String.format(format, "ENGINE", "STATE", "CAUSE", "QUARANTINE ENDS", "STREAKS", "LAST PROBE"));
    for (Object o : reply.getJsonArray("engines", new JsonArray())) {
      JsonObject e = (JsonObject) o;
      Object until = e.getValue("quarantine_until_ms");
      List<String> streaks = new ArrayList<>();
      JsonObject classes = e.getJsonObject("streaks", new JsonObject());
      classes.fieldNames().stream().sorted().forEach(c -> {
        if (classes.getInteger(c, 0) > 0) streaks.add(c + "=" + classes.getInteger(c));
      });
      s.append(String.format(format, e.getString("iid"), e.getString("state"), dash(e.getString("cause")),
          until instanceof Number n && "quarantined".equals(e.getString("state")) ? Instant.ofEpochMilli(n.longValue()).toString() : "-",
          streaks.isEmpty() ? "-" : String.join(",", streaks), dash(e.getString("last_probe"))));
    }
    s.append(differ);
    s.append(flow(reply.getJsonObject("flow")));
    JsonObject drift = reply.getJsonObject("config_drift");
    if (drift != null && drift.getBoolean("drifted", false)) {
      for (Object o : drift.getJsonArray("replicas", new JsonArray())) {
        JsonObject d = (JsonObject) o;
        s.append("config drift: replica ").append(d.getString("member")).append(" differs from the oldest replica ")
            .append(drift.getString("reference")).append(" on ")
            .append(String.join(", ", d.getJsonArray("keys", new JsonArray()).stream().map(String::valueOf).toList())).append('\n');
      }
    }
    return s.toString();
  }

  /** The answering replica's queue and each tenant's use of its quotas, cluster-wide; "" when the reply has none. */
  static String flow(JsonObject flow) {
    if (flow == null) return "";
    StringBuilder s = new StringBuilder();
    s.append("queue: ").append(flow.getInteger("running", 0)).append(" attempts running, ")
        .append(flow.getInteger("waiting", 0)).append(" waiting ").append(flow.getJsonObject("waiting_by_class", new JsonObject()).encode())
        .append(", ").append(flow.getInteger("held_by_engines", 0)).append(" of them for the engines' room (flow.engine_queue_max)");
    int forProducers = flow.getInteger("held_by_producers", 0);
    if (forProducers > 0) s.append(", ").append(forProducers).append(" for their producer's prefills (flow.prefill_legs_max)");
    s.append('\n');
    JsonObject quotas = flow.getJsonObject("quotas", new JsonObject());
    JsonObject tenants = quotas.getJsonObject("tenants", new JsonObject());
    s.append("quotas: counted with ").append(quotas.getValue("replicas_heard", 1)).append(" of ")
        .append(quotas.getValue("members", 1)).append(" replicas heard\n");
    JsonObject waiting = flow.getJsonObject("waiting_by_tenant", new JsonObject());
    if (tenants.isEmpty() && waiting.isEmpty()) return s.toString();
    String format = "%-20s %-16s %-18s %-16s %s%n";
    s.append(String.format(format, "TENANT", "REQUESTS/MIN", "TOKENS/MIN", "RUNNING HERE", "WAITING HERE"));
    java.util.TreeSet<String> names = new java.util.TreeSet<>(tenants.fieldNames());
    names.addAll(waiting.fieldNames());
    for (String name : names) {
      JsonObject t = tenants.getJsonObject(name, new JsonObject());
      s.append(String.format(format, name, t.getValue("requests_last_minute", "-"), t.getValue("tokens_last_minute", "-"),
          t.getValue("concurrent_here", "-"), waiting.getValue(name, 0)));
    }
    return s.toString();
  }

  /**
   * The engines on which the replicas' views differ, a column per replica: the engine's state there, {@code -} where
   * that replica's fleet file does not list it, {@code ?} for a replica that did not answer; "" when they agree.
   */
  static String differences(JsonArray replicas) {
    if (replicas.size() < 2) return "";
    List<String> iids = new ArrayList<>();
    List<java.util.Map<String, String>> states = new ArrayList<>();
    List<String> names = new ArrayList<>();
    boolean holdsDiffer = false;
    Boolean hold = null;
    for (Object o : replicas) {
      JsonObject r = (JsonObject) o;
      names.add(r.getString("member", r.getString("replica", "?")));
      java.util.Map<String, String> view = new java.util.HashMap<>();
      if (r.getBoolean("answered", false)) {
        for (Object e : r.getJsonArray("engines", new JsonArray())) {
          JsonObject engine = (JsonObject) e;
          view.put(engine.getString("iid"), engine.getString("state"));
          if (!iids.contains(engine.getString("iid"))) iids.add(engine.getString("iid"));
        }
        boolean held = r.getBoolean("fleet_hold", false);
        holdsDiffer |= hold != null && hold != held;
        hold = held;
        states.add(view);
      } else {
        states.add(null);
      }
    }
    List<String> rows = new ArrayList<>();
    String format = "%-8s" + " %-22s".repeat(names.size()) + "%n";
    for (String iid : iids) {
      List<String> cells = states.stream().map(v -> v == null ? "?" : v.getOrDefault(iid, "-")).toList();
      if (cells.stream().distinct().count() > 1) {
        List<Object> args = new ArrayList<>(List.of(iid));
        args.addAll(cells);
        rows.add(String.format(format, args.toArray()));
      }
    }
    if (rows.isEmpty() && !holdsDiffer) return "";
    StringBuilder s = new StringBuilder("replicas differ (-: not in that replica's fleet file, ?: no answer):\n");
    List<Object> header = new ArrayList<>(List.of("ENGINE"));
    header.addAll(names);
    s.append(String.format(format, header.toArray()));
    rows.forEach(s::append);
    if (holdsDiffer) {
      List<Object> args = new ArrayList<>(List.of("HOLD"));
      replicas.stream().map(JsonObject.class::cast).forEach(r -> args.add(!r.getBoolean("answered", false) ? "?"
          : r.getBoolean("fleet_hold", false) ? "ON" : "off"));
      s.append(String.format(format, args.toArray()));
    }
    return s.toString();
  }

  private static String dash(String value) {
    return value == null || value.isEmpty() ? "-" : value;
  }

  private static void quietLogs() {
    for (String name : List.of("com.hazelcast", "io.vertx", ClusterSeal.class.getName())) {
      Logger logger = Logger.getLogger(name);
      logger.setLevel(Level.OFF);
      QUIETED.add(logger);
    }
  }

  /** The admin token from {@code admin.token_file} or {@code admin.token_env}; null when unset or empty. */
  private String adminToken(NarwhalConfig.AdminView config) {
    String token = new narwhal.common.auth.SecretFiles(env).apply(config.admin().token().lookupName());
    return token == null || token.isEmpty() ? null : token;
  }

  private static String unsetHint(NarwhalConfig.AdminView config) {
    narwhal.common.config.SecretRef source = config.admin().token();
    return source.file().isEmpty() ? " ($" + source.env() + " is not set)" : " (" + source.describe() + " is missing or empty)";
  }
}
