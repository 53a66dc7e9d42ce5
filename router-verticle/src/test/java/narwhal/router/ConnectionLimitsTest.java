package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client connections a replica holds are bounded (docs/operations.md#connection-limits): one idle for
 * {@code server.idle_timeout_s} after its last answer is closed, never one with a request in flight; past
 * {@code server.max_connections} a new one is closed as it arrives and counted, while the health port answers.
 */
@Timeout(120)
class ConnectionLimitsTest {
  private static final String HEALTH = "GET /health HTTP/1.1\r\nHost: narwhal\r\n\r\n";

  @Test
  void anIdleKeepAliveConnectionIsClosedAfterTheIdleTimeoutButNotWhileARequestRuns() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("server", json.getJsonObject("server").put("idle_timeout_s", 0.3)),
        (iid, options) -> options.setTtftBaseMs(1_500))) {
      try (Socket idle = connect(h)) {
        write(idle, HEALTH);
        String first = readAnswer(idle.getInputStream());
        assertTrue(first.startsWith("HTTP/1.1 200"), first);
        write(idle, HEALTH);
        assertTrue(readAnswer(idle.getInputStream()).startsWith("HTTP/1.1 200"), "kept alive between requests");
        assertEquals(-1, idle.getInputStream().read(), "closed once idle for server.idle_timeout_s");
      }

      // the answer takes longer than the idle timeout: the connection waits for it, then idles and closes
      try (Socket busy = connect(h)) {
        String body = new JsonObject().put("model", RouterHarness.MODEL).put("prompt", "the narwhal").put("max_tokens", 2).encode();
        write(busy, "POST /v1/completions HTTP/1.1\r\nHost: narwhal\r\nContent-Type: application/json\r\nContent-Length: "
            + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body);
        String answer = readAnswer(busy.getInputStream());
        assertTrue(answer.startsWith("HTTP/1.1 200"), answer);
        assertTrue(answer.contains("\"choices\""), answer);
        assertEquals(-1, busy.getInputStream().read(), "closed once idle after its answer");
      }
    }
  }

  @Test
  void pastTheCapANewConnectionIsClosedAndCountedWhileTheHealthPortAnswers() throws Exception {
    try (RouterHarness h = RouterHarness.start(List.of("P0:prefill", "D0:decode"),
        json -> json.put("server", json.getJsonObject("server").put("max_connections", 2).put("health_port", 0)))) {
      List<Socket> held = new ArrayList<>();
      try {
        for (int i = 0; i < 2; i++) {
          Socket s = connect(h);
          held.add(s);
          write(s, HEALTH);
          assertTrue(readAnswer(s.getInputStream()).startsWith("HTTP/1.1 200"), "connection " + (i + 1) + " is served");
        }
        try (Socket third = connect(h)) {
          write(third, HEALTH);
          assertEquals(-1, third.getInputStream().read(), "the connection past server.max_connections is closed unanswered");
        }
        assertEquals(1.0, h.registry.get("narwhal.connections.refused").counter().count());
        assertEquals(2.0, h.registry.get("narwhal.connections.open").gauge().value());

        HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + h.router.healthPort() + "/health")).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, health.statusCode(), "the health port answers while the client port is full");

        write(held.get(0), HEALTH);
        assertTrue(readAnswer(held.get(0).getInputStream()).startsWith("HTTP/1.1 200"), "the connections held are still served");
      } finally {
        for (Socket s : held) s.close();
      }
    }
  }

  /** The default cap keeps a quarter of the descriptor limit, at least 256, for everything but client connections. */
  @Test
  void theDefaultCapKeepsDescriptorsInReserve() {
    assertEquals(15_000, ClientConnections.automaticCap(20_000));
    assertEquals(768, ClientConnections.automaticCap(1_024));
    assertEquals(1, ClientConnections.automaticCap(200));
    assertEquals(ClientConnections.UNKNOWN_LIMIT_CAP, ClientConnections.automaticCap(-1));
  }

  private static Socket connect(RouterHarness h) throws IOException {
    Socket socket = new Socket("127.0.0.1", h.router.actualPort());
    socket.setSoTimeout(60_000);
    return socket;
  }

  private static void write(Socket socket, String request) throws IOException {
    socket.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
    socket.getOutputStream().flush();
  }

  /** One HTTP/1.1 answer with a {@code content-length} (head and body), leaving the connection open. */
  private static String readAnswer(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) return head.toString(StandardCharsets.ISO_8859_1);
      head.write(b);
    }
    String text = head.toString(StandardCharsets.ISO_8859_1);
    int length = 0;
    for (String line : text.split("\r\n")) {
      if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) length = Integer.parseInt(line.substring(15).trim());
    }
    return text + new String(in.readNBytes(length), StandardCharsets.UTF_8);
  }
}
