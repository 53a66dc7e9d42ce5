package narwhal.router;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * R5, RFC 9112 §6: a request whose framing is ambiguous is answered 400 with the contract's error, a request id and
 * a journal row, and the connection is closed with nothing more served, so no second request can hide behind it.
 * Each case is sent with {@code GET /health} pipelined behind it on the same raw socket.
 */
@Timeout(120)
class RequestFramingTest {
  private static final String BEHIND = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  private static final Pattern STATUS = Pattern.compile("HTTP/1\\.[01] (\\d{3}) ");
  private static final String POST = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  private static final String BODY = "{\"prompt\":\"hello there\",\"max_tokens\":2}";
  private static final String CHUNKED_BODY = Integer.toHexString(BODY.length()) + "\r\n" + BODY + "\r\n0\r\n\r\n";
  static RouterHarness h;

  @BeforeAll
  static void start() throws Exception {
    h = RouterHarness.start(List.of("P0:prefill", "D0:decode"));
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  /** What came back on one connection: the raw bytes until the server closed it. */
  private static String exchange(String raw) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", h.router.actualPort())) {
      socket.setSoTimeout(20_000);
      socket.getOutputStream().write(raw.getBytes(StandardCharsets.ISO_8859_1));
      socket.getOutputStream().flush();
      return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static List<Integer> statuses(String answer) {
    List<Integer> out = new ArrayList<>();
    Matcher m = STATUS.matcher(answer);
    while (m.find()) out.add(Integer.parseInt(m.group(1)));
    return out;
  }

  /** One 400 naming the fault, the connection closed, the request behind it not served; journalled. */
  private static void refusedThenClosed(String raw, String messageStart) throws Exception {
    String answer = exchange(raw + BEHIND);
    String what = raw.lines().findFirst().orElseThrow() + " ... -> " + answer;
    assertEquals(List.of(400), statuses(answer), what);
    String head = answer.substring(0, answer.indexOf("\r\n\r\n")).toLowerCase(Locale.ROOT);
    assertTrue(head.contains("\r\nconnection: close"), what);
    Matcher rid = Pattern.compile("\r\nx-request-id: ([0-9a-f-]{36})").matcher(head);
    assertTrue(rid.find(), what);
    JsonObject error = new JsonObject(answer.substring(answer.indexOf("\r\n\r\n") + 4)).getJsonObject("error");
    assertEquals("BadRequestError", error.getString("type"), what);
    assertTrue(error.getString("message").startsWith(messageStart), what);
    JsonObject row = h.journalRow(rid.group(1));
    assertEquals("invalid", row.getString("terminal"), row.encode());
    assertEquals(400, row.getInteger("status"), row.encode());
  }

  @Test
  void contentLengthWithTransferEncodingIsRefused() throws Exception {
    String both = "Content-Length together with Transfer-Encoding";
    refusedThenClosed(POST + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + CHUNKED_BODY, both);
    refusedThenClosed(POST + "Transfer-Encoding: chunked\r\nContent-Length: " + CHUNKED_BODY.length() + "\r\n\r\n" + CHUNKED_BODY, both);
    refusedThenClosed(POST + "Content-Length: 5\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", both);
    refusedThenClosed(POST + "Content-Length: 0\r\nTransfer-Encoding: identity\r\n\r\n", both);
  }

  @Test
  void transferEncodingWhoseFinalCodingIsNotChunkedIsRefused() throws Exception {
    String fin = "Transfer-Encoding: the final coding must be chunked";
    refusedThenClosed(POST + "Transfer-Encoding: xchunked\r\n\r\n" + CHUNKED_BODY, fin);
    refusedThenClosed(POST + "Transfer-Encoding: chunked, gzip\r\n\r\n" + CHUNKED_BODY, fin);
    refusedThenClosed(POST + "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n" + CHUNKED_BODY, fin);
    refusedThenClosed(POST + "Transfer-Encoding: chunked,\r\n\r\n" + CHUNKED_BODY, fin);
    refusedThenClosed(POST + "Transfer-Encoding: \r\n\r\n" + CHUNKED_BODY, fin);
  }

  @Test
  void codingsWeDoNotImplementAreRefused() throws Exception {
    refusedThenClosed(POST + "Transfer-Encoding: gzip, chunked\r\n\r\n" + CHUNKED_BODY, "Transfer-Encoding: only chunked is supported, not 'gzip'");
    refusedThenClosed(POST + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + CHUNKED_BODY,
        "Transfer-Encoding: chunked more than once");
    refusedThenClosed("POST /v1/completions HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + CHUNKED_BODY,
        "Transfer-Encoding in an HTTP/1.0 request");
  }

  @Test
  void invalidOrConflictingContentLengthIsRefused() throws Exception {
    String cl = "Content-Length: expected a single decimal number of bytes";
    refusedThenClosed(POST + "Content-Length: abc\r\n\r\n{}", cl);
    refusedThenClosed(POST + "Content-Length: -5\r\n\r\n{}", cl);
    refusedThenClosed(POST + "Content-Length: +2\r\n\r\n{}", cl);
    refusedThenClosed(POST + "Content-Length: 0x2\r\n\r\n{}", cl);
    refusedThenClosed(POST + "Content-Length: 99999999999999999999\r\n\r\n{}", cl);
    refusedThenClosed(POST + "Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}", cl);
    refusedThenClosed(POST + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", cl);
    refusedThenClosed(POST + "Content-Length: 2, 2\r\n\r\n{}", cl);
    refusedThenClosed("POST /v1/completions HTTP/1.0\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}", cl);
  }

  @Test
  void requestLineOdditiesAreRefused() throws Exception {
    refusedThenClosed("POST /v1/completions HTTP/1.2\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "unsupported HTTP version HTTP/1.2");
    refusedThenClosed("POST /v1/completions http/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "unsupported HTTP version http/1.1");
    refusedThenClosed("POST /v1/completions HTTP/7.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "unsupported HTTP version");
    refusedThenClosed("POST /v1/completions HTTP/1.1 x\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "unsupported HTTP version");
  }

  /**
   * The row of a refused request head: a request line the decoder could not read has no path the client called
   * (endpoint null, never the decoder's placeholder); a head refused for its headers keeps the path.
   */
  @Test
  void aRefusedRequestHeadIsJournalledWithThePathTheClientCalledOrNone() throws Exception {
    String longLine = "GET /tokenize?" + "c".repeat(9000) + " HTTP/1.1\r\nHost: x\r\n\r\n";
    JsonObject line = refusedRow(longLine, 414);
    assertNull(line.getString("endpoint"), line.encode());
    assertEquals("invalid", line.getString("terminal"), line.encode());
    JsonObject version = refusedRow("POST /v1/completions HTTP/1.2\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 400);
    assertNull(version.getString("endpoint"), version.encode());
    JsonObject headers = refusedRow("POST /tokenize HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(20000) + "\r\n\r\n", 431);
    assertEquals("/tokenize", headers.getString("endpoint"), headers.encode());
    assertEquals("invalid", headers.getString("terminal"), headers.encode());
  }

  private static JsonObject refusedRow(String raw, int status) throws Exception {
    String answer = exchange(raw);
    assertEquals(List.of(status), statuses(answer), answer);
    Matcher rid = Pattern.compile("(?i)\r\nx-request-id: ([0-9a-f-]{36})").matcher(answer);
    assertTrue(rid.find(), answer);
    JsonObject row = h.journalRow(rid.group(1));
    assertEquals(status, row.getInteger("status"), row.encode());
    return row;
  }

  @Test
  void headerOdditiesAreRefused() throws Exception {
    String host = "Host: expected exactly one Host header";
    refusedThenClosed("POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", host);
    refusedThenClosed(POST + "Host: y\r\nContent-Length: 2\r\n\r\n{}", host);
    refusedThenClosed(POST + "Transfer-Encoding : chunked\r\n\r\n" + CHUNKED_BODY, "malformed HTTP request");
    refusedThenClosed(POST + "Content-Length: 2\r\nX-Bare: lf\nTransfer-Encoding: chunked\r\n\r\n{}", "malformed HTTP request");
    refusedThenClosed(POST + "Content-Length: 2\r\nX-Cr: a\rb\r\n\r\n{}", "malformed HTTP request");
    refusedThenClosed(POST + "Transfer-Encoding: \"chunked\"\r\n\r\n" + CHUNKED_BODY, "Transfer-Encoding: the final coding must be chunked");
    refusedThenClosed(POST + "Content-Length: 2\r\nTransfer-Encoding:\r\n chunked\r\n\r\n{}", "Content-Length together with Transfer-Encoding");
  }

  @Test
  void aBrokenChunkedBodyIsRefused() throws Exception {
    refusedThenClosed(POST + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "malformed HTTP request body framing");
  }

  @Test
  void theClientsRequestIdIsJournalledWithTheRefusal() throws Exception {
    String answer = exchange(POST + "X-Request-Id: smuggler-1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + BEHIND);
    Matcher rid = Pattern.compile("(?i)\r\nx-request-id: ([0-9a-f-]{36})").matcher(answer);
    assertTrue(rid.find(), answer);
    assertEquals("smuggler-1", h.journalRow(rid.group(1)).getString("client_rid"));
  }

  /** Well-framed keep-alive and pipelined requests are all served, in order, on one connection. */
  @Test
  void wellFramedPipelinedRequestsAreServed() throws Exception {
    String last = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    String answer = exchange(POST + "Content-Length: " + BODY.length() + "\r\n\r\n" + BODY
        + POST + "Transfer-Encoding: chunked\r\n\r\n" + CHUNKED_BODY
        + POST + "Transfer-Encoding: Chunked\r\n\r\n" + CHUNKED_BODY
        + POST + "Transfer-Encoding:\tchunked \r\n\r\n" + CHUNKED_BODY
        + BEHIND + last);
    assertEquals(List.of(200, 200, 200, 200, 200, 200), statuses(answer), answer);
    assertEquals(4, answer.split("\"text_completion\"", -1).length - 1, answer);
  }
}
