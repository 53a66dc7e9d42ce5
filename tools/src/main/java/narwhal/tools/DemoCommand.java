package narwhal.tools;

import narwhal.launcher.ServeOptions;
import narwhal.launcher.NarwhalNode;

import narwhal.common.config.NarwhalConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;

/** {@code narwhal demo}: the router plus the embedded simulated fleet of {@code conf/narwhal.json}, and a request to try. */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = "Run the router with an embedded simulated fleet (2 prefill + 2 decode engines by default).")
final class DemoCommand implements Callable<Integer> {
  @Mixin
  ServeOptions options = new ServeOptions();

  @Option(names = "--replicas", defaultValue = "1",
      description = "run this many clustered replicas, each its own process, behind haproxy on server.port "
          + "(configured from deploy/haproxy.cfg; needs haproxy installed) (default: ${DEFAULT-VALUE})")
  int replicas;

  @Override
  public Integer call() {
    NarwhalConfig config = options.config();
    if (replicas != 1) return new ReplicaDemo(config, replicas).run();
    NarwhalNode node = options.start(config);
    System.out.println();
    System.out.println("narwhal demo serving " + config.model() + " on port " + node.port() + "; " + node.describe() + ". Try:");
    System.out.println("  curl -s localhost:" + node.port() + "/v1/completions -H 'content-type: application/json' \\");
    System.out.println("    -d '{\"model\": \"" + config.model() + "\", \"prompt\": \"The narwhal is\", \"max_tokens\": 8}'");
    System.out.println("  curl -sN localhost:" + node.port() + "/v1/chat/completions -H 'content-type: application/json' \\");
    System.out.println("    -d '{\"model\": \"" + config.model() + "\", \"messages\": [{\"role\": \"user\", \"content\": \"hello\"}], \"stream\": true}'");
    System.out.println("  curl -s localhost:" + node.port() + "/narwhal/state");
    if (config.cluster().enabled()) {
      System.out.println("  ./narwhal admin state        (admin commands other than state need $" + config.admin().tokenEnv() + ")");
    }
    System.out.println("Ctrl-C stops it.");
    // one replica, no balancer in front: Ctrl-C stops at once (a clustered demo node may sit behind one)
    return ServeOptions.serveUntilStopped(node, config.cluster().enabled());
  }
}
