package narwhal.bench.process;

import narwhal.bench.probe.ProcessCpu;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * nginx from the OS packages as the relay baseline of P2: started on loopback with a generated config that
 * proxies one upstream (the decode engine) with buffering off, HTTP/1.1 keep-alive to the upstream, no
 * access log, {@code workers} worker processes. Stopped with SIGTERM.
 */
public final class NginxProcess implements AutoCloseable {
  private final Process process;
  private final int port;

  private NginxProcess(Process process, int port) {
    this.process = process;
    this.port = port;
  }

  /** The nginx binary on this machine, if there is one. */
  public static Optional<Path> binary() {
    return OsBinary.find("nginx");
  }

  public static String config(Path dir, int listenPort, int upstreamPort, int workers, boolean root) {
    String d = dir.toAbsolutePath().toString();
    return (root ? "user root;\n" : "")
        + "worker_processes " + workers + ";\n"
        + "daemon off;\n"
        + "master_process on;\n"
        + "pid " + d + "/nginx.pid;\n"
        + "error_log " + d + "/error.log warn;\n"
        + "worker_rlimit_nofile 65536;\n"
        + "events { worker_connections 16384; multi_accept on; }\n"
        + "http {\n"
        + "  access_log off;\n"
        + "  client_body_temp_path " + d + "/client_body;\n"
        + "  proxy_temp_path " + d + "/proxy;\n"
        + "  fastcgi_temp_path " + d + "/fastcgi;\n"
        + "  uwsgi_temp_path " + d + "/uwsgi;\n"
        + "  scgi_temp_path " + d + "/scgi;\n"
        + "  upstream decode { server 127.0.0.1:" + upstreamPort + "; keepalive 1024; }\n"
        + "  server {\n"
        + "    listen 127.0.0.1:" + listenPort + " backlog=4096;\n"
        + "    client_max_body_size 16m;\n"
        + "    location / {\n"
        + "      proxy_pass http://decode;\n"
        + "      proxy_http_version 1.1;\n"
        + "      proxy_set_header Connection \"\";\n"
        + "      proxy_buffering off;\n"
        + "      proxy_request_buffering off;\n"
        + "      proxy_cache off;\n"
        + "      proxy_read_timeout 600s;\n"
        + "    }\n"
        + "  }\n"
        + "}\n";
  }

  public static NginxProcess start(Path binary, Path dir, int upstreamPort, int workers) {
    try {
      Files.createDirectories(dir);
      int port = FreePort.pick();
      boolean root = "root".equals(System.getProperty("user.name"));
      Path conf = dir.resolve("nginx.conf");
      Files.writeString(conf, config(dir, port, upstreamPort, workers, root));
      Process process = new ProcessBuilder(binary.toString(), "-p", dir.toAbsolutePath().toString(), "-c", conf.toAbsolutePath().toString())
          .redirectErrorStream(true).redirectOutput(dir.resolve("nginx.out").toFile()).start();
      OsBinary.awaitListening("nginx", process, port,
          () -> Files.readString(dir.resolve("nginx.out")).strip() + " " + readIfExists(dir.resolve("error.log")));
      return new NginxProcess(process, port);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String readIfExists(Path p) throws IOException {
    return Files.exists(p) ? Files.readString(p).strip() : "";
  }

  public int port() {
    return port;
  }

  /** CPU seconds of the master and its workers. */
  public double cpuSeconds() {
    return ProcessCpu.treeSeconds(process.toHandle());
  }

  @Override
  public void close() {
    OsBinary.stop(process);
  }
}
