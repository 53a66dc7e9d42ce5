package narwhal.bench.scenario;

import io.vertx.core.buffer.Buffer;
import narwhal.bench.load.RawHttp;
import narwhal.bench.process.SimBench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The hostile inputs of R5, grouped: malformed JSON, wrong types, huge bodies, invalid UTF-8, HTTP framing,
 * request smuggling (each case with a second request behind it), header floods and slow senders. Each case is a raw byte script and what a correct edge answers.
 */
public final class FuzzCases {
  static final String C = "/v1/completions";
  static final String CHAT = "/v1/chat/completions";
  static final String M = SimBench.MODEL;

  /** What a correct router does with a case. */
  enum Expect {
    /** Every answer is a 4xx. */
    ANSWER_4XX("4xx"),
    /** Valid if odd input: a 200 or a 4xx, never a 5xx. */
    NO_5XX("200 or 4xx"),
    /** A slow or silent sender: a 4xx (408) or the connection closed, within the bound; never held forever. */
    BOUNDED("408/4xx or close, in time"),
    /** Ambiguous framing (RFC 9112 §6): one 4xx, then the connection closed; the request sent behind it never answered. */
    REFUSED_ALONE("4xx + close, next unserved"),
    /** Odd but well-framed: the request and the one pipelined behind it are both served. */
    BOTH_SERVED("both served");

    final String text;

    Expect(String text) {
      this.text = text;
    }
  }

  record Case(String group, String name, RawHttp.Script script, Expect expect, boolean slow) {
  }

  private FuzzCases() {
  }

  static List<Case> all(long slowBoundMs) {
    List<Case> out = new ArrayList<>();
    String ok = "{\"model\":\"" + M + "\",\"prompt\":\"hello there\",\"max_tokens\":2";
    // malformed JSON
    json(out, "malformed JSON", "truncated object", C, ok);
    json(out, "malformed JSON", "not JSON at all", C, "this is not json");
    json(out, "malformed JSON", "array at top level", C, "[1,2,3]");
    json(out, "malformed JSON", "null at top level", C, "null");
    json(out, "malformed JSON", "string at top level", C, "\"just a string\"");
    json(out, "malformed JSON", "empty body", C, "");
    json(out, "malformed JSON", "nested arrays 100,000 deep", C, "[".repeat(100_000) + "]".repeat(100_000));
    json(out, "malformed JSON", "nested objects 50,000 deep", C, "{\"a\":".repeat(50_000) + "1" + "}".repeat(50_000));
    json(out, "malformed JSON", "trailing garbage", C, ok + "} xyz");
    json(out, "malformed JSON", "NaN literal", C, ok + ",\"temperature\":NaN}");
    json(out, "malformed JSON", "single quotes", C, "{'model':'" + M + "','prompt':'hi'}");
    json(out, "malformed JSON", "unterminated string", C, "{\"model\":\"" + M + "\",\"prompt\":\"hi");
    // wrong types
    json(out, "wrong types", "prompt is a number", C, "{\"model\":\"" + M + "\",\"prompt\":42}");
    json(out, "wrong types", "prompt is empty", C, "{\"model\":\"" + M + "\",\"prompt\":\"\"}");
    json(out, "wrong types", "prompt is an empty array", C, "{\"model\":\"" + M + "\",\"prompt\":[]}");
    json(out, "wrong types", "prompt is an object", C, "{\"model\":\"" + M + "\",\"prompt\":{\"x\":1}}");
    json(out, "wrong types", "messages is a string", CHAT, "{\"model\":\"" + M + "\",\"messages\":\"hello\"}");
    json(out, "wrong types", "messages holds a number", CHAT, "{\"model\":\"" + M + "\",\"messages\":[1]}");
    json(out, "wrong types", "message without role", CHAT, "{\"model\":\"" + M + "\",\"messages\":[{\"content\":\"x\"}]}");
    json(out, "wrong types", "max_tokens is a non-numeric string", C, ok.replace("\"max_tokens\":2", "\"max_tokens\":\"eight\"") + "}");
    json(out, "wrong types", "max_tokens is negative", C, ok.replace("\"max_tokens\":2", "\"max_tokens\":-1") + "}");
    json(out, "wrong types", "max_tokens is fractional", C, ok.replace("\"max_tokens\":2", "\"max_tokens\":1.5") + "}");
    json(out, "wrong types", "max_tokens is 1e400", C, ok.replace("\"max_tokens\":2", "\"max_tokens\":1e400") + "}");
    json(out, "wrong types", "max_tokens beyond 64 bits", C, ok.replace("\"max_tokens\":2", "\"max_tokens\":99999999999999999999999") + "}");
    json(out, "wrong types", "stream is a string", C, ok + ",\"stream\":\"yes\"}");
    json(out, "wrong types", "n is 2", C, ok + ",\"n\":2}");
    json(out, "wrong types", "temperature is a string", C, ok + ",\"temperature\":\"hot\"}");
    json(out, "wrong types", "model is a number", C, "{\"model\":7,\"prompt\":\"hi\"}");
    json(out, "wrong types", "stream_options without stream", C, ok + ",\"stream_options\":{\"include_usage\":true}}");
    json(out, "wrong types", "unknown model", C, "{\"model\":\"no-such-model\",\"prompt\":\"hi\"}");
    // internal fields (issue 40): dropped before any engine, the request served; over-long request ids refused
    String evil = "{\"do_remote_prefill\":true,\"remote_host\":\"127.0.0.1\",\"remote_port\":29555,"
        + "\"remote_engine_id\":\"evil-engine\",\"remote_block_ids\":[[1,2,3,4]]}";
    json(out, "internal fields", "kv_transfer_params on /v1/responses", "/v1/responses",
        "{\"model\":\"" + M + "\",\"input\":\"x\",\"max_output_tokens\":2,\"kv_transfer_params\":" + evil + "}", Expect.NO_5XX);
    json(out, "internal fields", "kv_transfer_params in vllm_xargs", C,
        ok + ",\"vllm_xargs\":{\"kv_transfer_params\":" + evil + "}}", Expect.NO_5XX);
    json(out, "internal fields", "kv_transfer_params in vllm_xargs on /v1/responses", "/v1/responses",
        "{\"model\":\"" + M + "\",\"input\":\"x\",\"max_output_tokens\":2,\"vllm_xargs\":{\"kv_transfer_params\":" + evil + "}}",
        Expect.NO_5XX);
    out.add(new Case("internal fields", "x-request-id of 7,000 characters", RawHttp.Script.once(RawHttp.post(C, bytes(ok + "}"),
        "X-Request-Id: " + "r".repeat(7_000) + "\r\n")), Expect.ANSWER_4XX, false));
    out.add(new Case("internal fields", "x-request-id of 257 characters", RawHttp.Script.once(RawHttp.post(C, bytes(ok + "}"),
        "X-Request-Id: " + "r".repeat(257) + "\r\n")), Expect.ANSWER_4XX, false));
    // huge bodies
    out.add(new Case("huge bodies", "declares 10 GiB, sends 20 bytes", RawHttp.Script.once(RawHttp.text("POST " + C
        + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10737418240\r\n\r\n{\"model\":\"x\",\"pro")),
        Expect.ANSWER_4XX, false));
    out.add(new Case("huge bodies", "5 MiB body with its length", RawHttp.Script.once(RawHttp.post(C, bigJson(5 << 20), "")),
        Expect.ANSWER_4XX, false));
    out.add(new Case("huge bodies", "8 MiB chunked, no length", chunked(bigJson(8 << 20)), Expect.ANSWER_4XX, false));
    out.add(new Case("huge bodies", "3.5 MiB prompt under the body limit", RawHttp.Script.once(RawHttp.post(C, bigJson(3_500_000), "")),
        Expect.ANSWER_4XX, false));
    // invalid UTF-8
    bytes(out, "invalid UTF-8", "0xFF inside a string", C, prefix(), new byte[] {(byte) 0xFF, 'a'}, suffix());
    bytes(out, "invalid UTF-8", "truncated 2-byte sequence", C, prefix(), new byte[] {(byte) 0xC3, '('}, suffix());
    bytes(out, "invalid UTF-8", "overlong encoding of '/'", C, prefix(), new byte[] {(byte) 0xC0, (byte) 0xAF}, suffix());
    bytes(out, "invalid UTF-8", "continuation byte alone", C, prefix(), new byte[] {(byte) 0x80, (byte) 0x80}, suffix());
    bytes(out, "invalid UTF-8", "raw NUL and control bytes in a string", C, prefix(), new byte[] {0, 1, 2, 0x1b}, suffix());
    bytes(out, "invalid UTF-8", "UTF-16 surrogate encoded as UTF-8", C, prefix(), new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
        suffix());
    json(out, "invalid UTF-8", "escaped lone surrogate \\ud800", C, "{\"model\":\"" + M + "\",\"prompt\":\"a\\ud800b\",\"max_tokens\":2}",
        Expect.NO_5XX);
    // HTTP framing
    byte[] garbage = new byte[512];
    new Random(7).nextBytes(garbage);
    out.add(new Case("HTTP framing", "512 random bytes", RawHttp.Script.once(Buffer.buffer(garbage)), Expect.ANSWER_4XX, false));
    out.add(new Case("HTTP framing", "TLS ClientHello on the plain port", RawHttp.Script.once(Buffer.buffer(tlsHello())),
        Expect.ANSWER_4XX, false));
    raw(out, "HTTP framing", "Content-Length: abc", "POST " + C + " HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}");
    raw(out, "HTTP framing", "Content-Length: -5", "POST " + C + " HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}");
    raw(out, "HTTP framing", "two different Content-Lengths", "POST " + C
        + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}");
    raw(out, "HTTP framing", "Content-Length with chunked", "POST " + C
        + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    raw(out, "HTTP framing", "bad chunk size", "POST " + C + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
    raw(out, "HTTP framing", "request line without version", "POST " + C + "\r\n\r\n");
    raw(out, "HTTP framing", "HTTP/7.0", "POST " + C + " HTTP/7.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    raw(out, "HTTP framing", "GET on an inference path", "GET " + C + " HTTP/1.1\r\nHost: x\r\n\r\n");
    raw(out, "HTTP framing", "unknown path", "POST /v1/../../etc/passwd HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    StringBuilder pipelined = new StringBuilder();
    for (int i = 0; i < 50; i++) pipelined.append("POST " + C + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{bad}");
    out.add(new Case("HTTP framing", "50 malformed requests pipelined", new RawHttp.Script(List.of(new RawHttp.Step(0,
        RawHttp.text(pipelined.toString()))), 50), Expect.ANSWER_4XX, false));
    smuggling(out, ok + "}");
    // header floods
    StringBuilder many = new StringBuilder();
    for (int i = 0; i < 2000; i++) many.append("X-Flood-").append(i).append(": ").append("v".repeat(8)).append("\r\n");
    out.add(new Case("header floods", "2,000 headers", RawHttp.Script.once(RawHttp.post(C, bytes(ok + "}"), many.toString())),
        Expect.ANSWER_4XX, false));
    out.add(new Case("header floods", "one 64 KiB header", RawHttp.Script.once(RawHttp.post(C, bytes(ok + "}"),
        "X-Big: " + "b".repeat(64 << 10) + "\r\n")), Expect.ANSWER_4XX, false));
    out.add(new Case("header floods", "64 KiB request URI", RawHttp.Script.once(RawHttp.post(C + "?q=" + "u".repeat(64 << 10),
        bytes(ok + "}"), "")), Expect.ANSWER_4XX, false));
    StringBuilder fine = new StringBuilder();
    for (int i = 0; i < 100; i++) fine.append("X-Ok-").append(i).append(": v\r\n");
    out.add(new Case("header floods", "100 small headers (under the limit)", RawHttp.Script.once(RawHttp.post(C, bytes(ok + "}"),
        fine.toString())), Expect.NO_5XX, false));
    // slow senders
    out.add(new Case("slow senders", "connects, sends nothing", new RawHttp.Script(List.of(), 1), Expect.BOUNDED, true));
    out.add(new Case("slow senders", "headers at 1 byte / 200 ms", trickle("POST " + C + " HTTP/1.1\r\nHost: x\r\nX-Slow: "
        + "s".repeat(4000), 200, slowBoundMs), Expect.BOUNDED, true));
    out.add(new Case("slow senders", "body at 1 byte / 200 ms", trickleBody(200, slowBoundMs), Expect.BOUNDED, true));
    out.add(new Case("slow senders", "declares 1,000 bytes, sends 10, stalls", new RawHttp.Script(List.of(new RawHttp.Step(0,
        RawHttp.text("POST " + C + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":"))), 1),
        Expect.BOUNDED, true));
    return out;
  }

  /**
   * Request smuggling: each case is followed on its connection by {@code GET /health}. Ambiguous framing must be
   * refused with the connection closed, so that the request behind it is never answered; odd but well-framed
   * requests (and the one behind them) must be served.
   */
  private static void smuggling(List<Case> out, String body) {
    String post = "POST " + C + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
    String cl = "Content-Length: " + body.length() + "\r\n";
    String chunk = Integer.toHexString(body.length()) + "\r\n" + body + "\r\n0\r\n\r\n";
    String http10 = "POST " + C + " HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\n";
    // Content-Length together with Transfer-Encoding
    refused(out, "CL then TE: chunked (CL.TE)", post + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk);
    refused(out, "TE: chunked then CL (TE.CL)", post + "Transfer-Encoding: chunked\r\nContent-Length: " + chunk.length() + "\r\n\r\n" + chunk);
    refused(out, "CL 0 + TE: chunked hiding a request", post + "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        + "GET /narwhal/state HTTP/1.1\r\nHost: x\r\n\r\n");
    refused(out, "CL + TE: xchunked", post + cl + "Transfer-Encoding: xchunked\r\n\r\n" + body);
    refused(out, "CL + TE: identity", post + cl + "Transfer-Encoding: identity\r\n\r\n" + body);
    refused(out, "CL + TE: CHUNKED (upper case)", post + cl + "Transfer-Encoding: CHUNKED\r\n\r\n" + chunk);
    refused(out, "CL + TE folded onto a second line", post + cl + "Transfer-Encoding:\r\n chunked\r\n\r\n" + body);
    // Transfer-Encoding alone: the final coding must be chunked, and nothing else is implemented
    refused(out, "TE: xchunked", post + "Transfer-Encoding: xchunked\r\n\r\n" + chunk);
    refused(out, "TE: identity", post + "Transfer-Encoding: identity\r\n\r\n" + chunk);
    refused(out, "TE: chunked, gzip (final not chunked)", post + "Transfer-Encoding: chunked, gzip\r\n\r\n" + chunk);
    refused(out, "TE: gzip, chunked (coding not implemented)", post + "Transfer-Encoding: gzip, chunked\r\n\r\n" + chunk);
    refused(out, "TE: chunked, chunked", post + "Transfer-Encoding: chunked, chunked\r\n\r\n" + chunk);
    refused(out, "TE: chunked repeated as two headers", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk);
    refused(out, "TE: chunked then TE: identity", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n" + chunk);
    refused(out, "TE: empty", post + "Transfer-Encoding: \r\n\r\n" + chunk);
    refused(out, "TE: chunked, (empty last element)", post + "Transfer-Encoding: chunked,\r\n\r\n" + chunk);
    refused(out, "TE: \"chunked\" (quoted)", post + "Transfer-Encoding: \"chunked\"\r\n\r\n" + chunk);
    refused(out, "TE: chunked;q=1 (parameter)", post + "Transfer-Encoding: chunked;q=1\r\n\r\n" + chunk);
    refused(out, "TE: chunk\u00e9d (non-ASCII)", post + "Transfer-Encoding: chunk\u00e9d\r\n\r\n" + chunk);
    refused(out, "TE: \\x0bchunked (vertical tab)", post + "Transfer-Encoding: \u000bchunked\r\n\r\n" + chunk);
    refused(out, "TE with a space before the colon", post + "Transfer-Encoding : chunked\r\n\r\n" + chunk);
    refused(out, "TE: chunked in HTTP/1.0", http10 + "Transfer-Encoding: chunked\r\n\r\n" + chunk);
    // Content-Length: one decimal number
    refused(out, "CL: abc", post + "Content-Length: abc\r\n\r\n" + body);
    refused(out, "CL: -5", post + "Content-Length: -5\r\n\r\n" + body);
    refused(out, "CL: +N (signed)", post + "Content-Length: +" + body.length() + "\r\n\r\n" + body);
    refused(out, "CL: 0x.. (hex)", post + "Content-Length: 0x" + Integer.toHexString(body.length()) + "\r\n\r\n" + body);
    refused(out, "CL: empty", post + "Content-Length: \r\n\r\n" + body);
    refused(out, "CL: 31 digits", post + "Content-Length: 1" + "0".repeat(30) + "\r\n\r\n" + body);
    refused(out, "two different CLs", post + cl + "Content-Length: 4\r\n\r\n" + body);
    refused(out, "two equal CLs", post + cl + cl + "\r\n" + body);
    refused(out, "CL: N, N (list)", post + "Content-Length: " + body.length() + ", " + body.length() + "\r\n\r\n" + body);
    refused(out, "two different CLs in HTTP/1.0", http10 + cl + "Content-Length: 4\r\n\r\n" + body);
    refused(out, "CL with a space before the colon", post + "Content-Length : " + body.length() + "\r\n\r\n" + body);
    // request line and header oddities
    refused(out, "HTTP/1.2", "POST " + C + " HTTP/1.2\r\nHost: x\r\n" + cl + "\r\n" + body);
    refused(out, "http/1.1 (lower case)", "POST " + C + " http/1.1\r\nHost: x\r\n" + cl + "\r\n" + body);
    refused(out, "extra token after the version", "POST " + C + " HTTP/1.1 x\r\nHost: x\r\n" + cl + "\r\n" + body);
    refused(out, "no version, a request behind it", "POST " + C + "\r\nHost: x\r\n" + cl + "\r\n" + body);
    refused(out, "bare LF line endings", "POST " + C + " HTTP/1.1\nHost: x\n" + cl.replace("\r", "") + "\n" + body);
    refused(out, "bare LF hiding a TE header", post + cl + "X-A: b\nTransfer-Encoding: chunked\r\n\r\n" + body);
    refused(out, "bare CR in a header value", post + cl + "X-A: b\rTransfer-Encoding: chunked\r\n\r\n" + body);
    refused(out, "NUL in a header value", post + cl + "X-A: b\u0000c\r\n\r\n" + body);
    refused(out, "header line without a colon", post + cl + "Transfer-Encoding chunked\r\n\r\n" + body);
    refused(out, "HTTP/1.1 without Host", "POST " + C + " HTTP/1.1\r\nContent-Type: application/json\r\n" + cl + "\r\n" + body);
    refused(out, "two Host headers", post + "Host: y\r\n" + cl + "\r\n" + body);
    // broken chunked bodies
    refused(out, "chunk size not hex", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n");
    refused(out, "chunk longer than its size", post + "Transfer-Encoding: chunked\r\n\r\n" + Integer.toHexString(body.length() - 4) + "\r\n"
        + body + "\r\n0\r\n\r\n");
    refused(out, "chunks with bare LF", post + "Transfer-Encoding: chunked\r\n\r\n" + chunk.replace("\r", ""));
    // odd but well-framed: served, and so is the request behind
    served(out, "keep-alive: CL then GET", post + cl + "\r\n" + body);
    served(out, "keep-alive: chunked then GET", post + "Transfer-Encoding: chunked\r\n\r\n" + chunk);
    served(out, "TE: Chunked (case)", post + "Transfer-Encoding: Chunked\r\n\r\n" + chunk);
    served(out, "TE: <tab>chunked<space> (whitespace)", post + "Transfer-Encoding:\tchunked \r\n\r\n" + chunk);
    served(out, "chunk extension, zero-padded size, trailer", post + "Transfer-Encoding: chunked\r\n\r\n000" + Integer.toHexString(body.length())
        + ";ext=1\r\n" + body + "\r\n0\r\nX-Trailer: t\r\n\r\n");
    served(out, "obs-fold in another header (unfolded)", post + cl + "X-Folded: a\r\n b\r\n\r\n" + body);
    served(out, "empty line before the request line", "\r\n" + post + cl + "\r\n" + body);
  }

  private static void refused(List<Case> out, String name, String request) {
    pipelined(out, name, request, Expect.REFUSED_ALONE);
  }

  private static void served(List<Case> out, String name, String request) {
    pipelined(out, name, request, Expect.BOTH_SERVED);
  }

  private static void pipelined(List<Case> out, String name, String request, Expect expect) {
    String behind = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    out.add(new Case("request smuggling", name, new RawHttp.Script(List.of(new RawHttp.Step(0, RawHttp.text(request + behind))), 2),
        expect, false));
  }

  private static void json(List<Case> out, String group, String name, String path, String body) {
    json(out, group, name, path, body, Expect.ANSWER_4XX);
  }

  private static void json(List<Case> out, String group, String name, String path, String body, Expect expect) {
    out.add(new Case(group, name, RawHttp.Script.once(RawHttp.post(path, bytes(body), "")), expect, false));
  }

  private static void raw(List<Case> out, String group, String name, String text) {
    out.add(new Case(group, name, RawHttp.Script.once(RawHttp.text(text)), Expect.ANSWER_4XX, false));
  }

  private static void bytes(List<Case> out, String group, String name, String path, byte[] a, byte[] b, byte[] c) {
    bytes(out, group, name, path, a, b, c, Expect.ANSWER_4XX);
  }

  private static void bytes(List<Case> out, String group, String name, String path, byte[] a, byte[] b, byte[] c, Expect expect) {
    byte[] body = new byte[a.length + b.length + c.length];
    System.arraycopy(a, 0, body, 0, a.length);
    System.arraycopy(b, 0, body, a.length, b.length);
    System.arraycopy(c, 0, body, a.length + b.length, c.length);
    out.add(new Case(group, name, RawHttp.Script.once(RawHttp.post(path, body, "")), expect, false));
  }

  private static byte[] prefix() {
    return bytes("{\"model\":\"" + M + "\",\"max_tokens\":2,\"prompt\":\"ab");
  }

  private static byte[] suffix() {
    return bytes("cd\"}");
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** A valid completion body of about {@code size} bytes (a long prompt of words). */
  static byte[] bigJson(int size) {
    String head = "{\"model\":\"" + M + "\",\"max_tokens\":2,\"prompt\":\"";
    String tail = "\"}";
    StringBuilder b = new StringBuilder(size + 16).append(head);
    while (b.length() < size - tail.length()) b.append("word ");
    return bytes(b.append(tail).toString());
  }

  private static RawHttp.Script chunked(byte[] body) {
    List<RawHttp.Step> steps = new ArrayList<>();
    steps.add(new RawHttp.Step(0, RawHttp.text("POST " + C + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")));
    int chunk = 64 << 10;
    for (int i = 0; i < body.length; i += chunk) {
      int n = Math.min(chunk, body.length - i);
      steps.add(new RawHttp.Step(0, RawHttp.text(Integer.toHexString(n) + "\r\n").appendBytes(body, i, n).appendString("\r\n")));
    }
    steps.add(new RawHttp.Step(0, RawHttp.text("0\r\n\r\n")));
    return new RawHttp.Script(steps, 1);
  }

  /** Sends {@code text} one byte every {@code pauseMs}, for longer than {@code boundMs}. */
  private static RawHttp.Script trickle(String text, long pauseMs, long boundMs) {
    List<RawHttp.Step> steps = new ArrayList<>();
    int n = (int) Math.min(text.length(), boundMs / pauseMs + 10);
    for (int i = 0; i < n; i++) steps.add(new RawHttp.Step(i == 0 ? 0 : pauseMs, RawHttp.text(text.substring(i, i + 1))));
    return new RawHttp.Script(steps, 1);
  }

  private static RawHttp.Script trickleBody(long pauseMs, long boundMs) {
    String body = "{\"model\":\"" + M + "\",\"max_tokens\":2,\"prompt\":\"" + "x".repeat(4000) + "\"}";
    List<RawHttp.Step> steps = new ArrayList<>();
    steps.add(new RawHttp.Step(0, RawHttp.text("POST " + C + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
        + body.length() + "\r\n\r\n")));
    int n = (int) Math.min(body.length(), boundMs / pauseMs + 10);
    for (int i = 0; i < n; i++) steps.add(new RawHttp.Step(pauseMs, RawHttp.text(body.substring(i, i + 1))));
    return new RawHttp.Script(steps, 1);
  }

  /** The start of a TLS 1.2 ClientHello record. */
  private static byte[] tlsHello() {
    byte[] b = new byte[200];
    byte[] head = {0x16, 0x03, 0x01, 0x00, (byte) 0xc3, 0x01, 0x00, 0x00, (byte) 0xbf, 0x03, 0x03};
    System.arraycopy(head, 0, b, 0, head.length);
    byte[] rest = new byte[b.length - head.length];
    new Random(11).nextBytes(rest);
    System.arraycopy(rest, 0, b, head.length, rest.length);
    return b;
  }
}
