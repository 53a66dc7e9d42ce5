package narwhal.engines.sse;

import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import narwhal.sim.SimEngine;
import narwhal.sim.SimEngineOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The fast reading of frames ({@link FrameScanner}) against the reference reading by Jackson, on generated frames in
 * vLLM's shapes (text, chat content, reasoning under both names, tool calls, logprobs, stop reasons, usage, errors,
 * unicode raw and escaped, whitespace), on those frames mutated byte by byte (most become invalid), on random JSON
 * over the keys that matter, on frames recorded from the simulated engine, and on streams of them split into
 * chunks anywhere or one event per chunk (read in place): whenever the scanner reads a frame, its event equals Jackson's; whenever Jackson refuses one,
 * the scanner declines it; and every unmutated vLLM frame without an error or usage object is read by the scanner.
 * The reading for an assembly ({@link FrameClassifier#byTree}) gives Jackson's event on every frame, with the tree
 * a later parse of the frame's bytes gives.
 */
@Timeout(120)
class FrameScanTest {
  private static final long SEED = 20261201L;
  private final FrameClassifier classifier = new FrameClassifier();
  private final FrameClassifier tree = new FrameClassifier(FrameUse.ASSEMBLY);
  private int scanned;
  private int declined;

  @Test
  void everyScannedFrameReadsAsJacksonReadsIt() {
    Random random = new Random(SEED);
    for (int i = 0; i < 4_000; i++) {
      String data = VllmFrames.any(random);
      JsonObject json = new JsonObject(data);
      boolean plain = !(json.getValue("usage") instanceof JsonObject) && !(json.getValue("error") instanceof JsonObject);
      boolean read = check(bytes(data));
      if (plain && !read) fail("the scanner declined a plain vLLM frame: " + data);
    }
    assertTrue(scanned > 2_800, "most generated frames are scanned: " + scanned);
  }

  @Test
  void mutatedFramesAreReadAlikeOrDeclined() {
    Random random = new Random(SEED + 1);
    int refusedByJackson = 0;
    for (int i = 0; i < 20_000; i++) {
      byte[] data = Mutations.mutate(random, bytes(VllmFrames.any(random)));
      if (!check(data)) refusedByJackson += jacksonRefuses(data) ? 1 : 0;
    }
    System.out.println("mutated: jackson refused " + refusedByJackson + ", scanned " + scanned + ", declined " + declined);
    assertTrue(refusedByJackson > 4_000, "the mutations make invalid frames: " + refusedByJackson);
    assertTrue(scanned > 2_000, "and valid ones the scanner reads: " + scanned);
  }

  @Test
  void randomJsonOverTheKeysThatMatter() {
    Random random = new Random(SEED + 2);
    for (int i = 0; i < 20_000; i++) check(bytes(RandomJson.object(random, 0)));
    System.out.println("random: scanned " + scanned + ", declined " + declined);
    assertTrue(scanned > 3_000, "random objects are scanned: " + scanned);
  }

  @Test
  void handWrittenEdgeCases() {
    List<String> cases = List.of(
        "{}", " {} ", "{\"choices\":[]}", "{\"choices\":null}", "{\"choices\":[null,1,\"x\",[],{}]}",
        "{\"choices\":[{\"text\":\"a\"}],\"choices\":[{\"text\":\"b\"}]}",
        "{\"choices\":[{\"text\":\"a\",\"text\":null}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"a\"},\"delta\":{}}]}",
        "{\"choices\":[{\"delta\":{\"tool_calls\":[]}}]}", "{\"choices\":[{\"delta\":{\"tool_calls\":[null]}}]}",
        "{\"choices\":[{\"delta\":{\"tool_calls\":{}}}]}",
        "{\"choices\":[{\"finish_reason\":\"stop\"},{\"finish_reason\":null}]}",
        "{\"choices\":[{\"te\\u0078t\":\"escaped key\"}]}", "{\"choices\":[{\"text\":\"\\ud83d\\ude00 \\ud800 \\u00e9\\n\\\"\\\\\\/\"}]}",
        "{\"choices\":[{\"text\":\"caf\u00e9 \u6f22 \ud83d\ude00\"}]}",
        "{\"usage\":null,\"error\":\"text\"}", "{\"usage\":{\"prompt_tokens\":1}}", "{\"error\":{\"message\":\"m\",\"code\":500}}",
        "{\"a\":-0.5e-10,\"b\":0,\"c\":-0,\"d\":1E+5,\"e\":[true,false,null]}",
        "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":+1}", "{\"a\":NaN}", "{\"a\":tru}", "{\"a\":nul}",
        "{\"a\":truex}", "{\"a\":1x}", "{\"a\":\"\t\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":1,}", "{,}",
        "{\"a\" 1}", "{\"a\":1}}", "{\"a\":1} x", "[]", "\"s\"", "null", "", " ", "{/* comment */}", "{\"a\":1 // c\n}",
        "\ufeff{}", "{\"a\":[1,]}", "{\"a\":[,1]}", "{'a':1}", "{a:1}", "{\"a\":1\n,\r\"b\":\t2}");
    for (String c : cases) check(bytes(c));
    byte[][] raw = {
        {'{', '"', 'a', '"', ':', '"', (byte) 0xC0, (byte) 0xAF, '"', '}'},
        {'{', '"', 'a', '"', ':', '"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"', '}'},
        {'{', '"', 'a', '"', ':', '"', (byte) 0xFF, '"', '}'},
        {'{', '"', 'a', '"', ':', '"', (byte) 0xE2, (byte) 0x82, '"', '}'},
        {'{', '"', 'a', '"', ':', '"', (byte) 0x80, '"', '}'},
        {'{', '"', 'a', '"', ':', '"', (byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80, '"', '}'},
        {'{', '"', 'a', '"', ':', '"', 0, '"', '}'},
        {'{', 0, '}'},
    };
    for (byte[] r : raw) check(r);
    assertEquals(17, scanned, "every valid case without an error or usage object or an escaped key is scanned");
  }

  @Test
  void framesRecordedFromTheSimulatedEngine() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      List<String> frames = new ArrayList<>();
      for (String reasoningField : List.of("reasoning", "reasoning_content")) {
        SimEngine engine = SimEngine.start(vertx, new SimEngineOptions().setName("E0").setReasoningField(reasoningField))
            .await(20, TimeUnit.SECONDS);
        HttpClientAgent http = vertx.createHttpClient();
        for (JsonObject request : VllmFrames.requests()) {
          Promise<Buffer> answer = Promise.promise();
          vertx.runOnContext(v -> http.request(new RequestOptions().setMethod(HttpMethod.POST)
                  .setAbsoluteURI(engine.url() + request.getString("path")).putHeader("content-type", "application/json"))
              .compose(req -> req.send(request.getJsonObject("body").toBuffer()))
              .compose(resp -> resp.body()).onComplete(answer));
          String body = answer.future().await(20, TimeUnit.SECONDS).toString();
          for (String event : body.split("\n\n")) {
            if (event.startsWith("data: ")) frames.add(event.substring("data: ".length()));
          }
        }
        engine.close().await(10, TimeUnit.SECONDS);
      }
      assertTrue(frames.size() > 100, "recorded frames: " + frames.size());
      int usage = 0;
      for (String frame : frames) {
        boolean read = check(bytes(frame));
        if (frame.contains("\"usage\":{")) usage++;
        else if (!read && !frame.equals("[DONE]")) fail("the scanner declined a recorded frame: " + frame);
      }
      assertTrue(usage > 0, "include_usage frames were recorded");
      Random random = new Random(SEED + 3);
      for (int k = 0; k < 200; k++) splitStream(random, frames.subList(random.nextInt(frames.size() / 2), frames.size()));
    } finally {
      vertx.close().await(20, TimeUnit.SECONDS);
    }
  }

  @Test
  void streamsSplitAcrossChunksAnywhere() {
    Random random = new Random(SEED + 4);
    for (int k = 0; k < 300; k++) {
      List<String> frames = new ArrayList<>();
      int n = 1 + random.nextInt(12);
      for (int i = 0; i < n; i++) frames.add(VllmFrames.any(random));
      splitStream(random, frames);
    }
  }

  /** The frames as one SSE stream (some data split over several lines), fed in random chunks, read alike. */
  private void splitStream(Random random, List<String> frames) {
    StringBuilder wire = new StringBuilder();
    List<String> expected = new ArrayList<>();
    List<Integer> eventEnds = new ArrayList<>();
    boolean wholeEvents = random.nextInt(3) == 0;
    for (String frame : frames) {
      String joined = random.nextInt(5) == 0 && frame.contains(",") ? frame.replaceFirst(",", "\n,") : frame;
      wire.append("data: ").append(joined.replace("\n", "\ndata: ")).append(random.nextBoolean() ? "\n\n" : "\r\n\r\n");
      if (random.nextInt(6) == 0) wire.append(": keep-alive comment\n\n");
      eventEnds.add(wire.toString().getBytes(StandardCharsets.UTF_8).length);
      expected.add(describe(() -> new FrameClassifier().byJackson(event(bytes(joined)), 0, event(bytes(joined)).length, null)));
    }
    byte[] all = wire.toString().getBytes(StandardCharsets.UTF_8);
    List<String> seen = new ArrayList<>();
    SseReader reader = new SseReader(1 << 20, e -> seen.add(describe(() -> e)));
    List<String> assembled = new ArrayList<>();
    SseReader assembly = new SseReader(1 << 20, FrameUse.ASSEMBLY, e -> assembled.add(describe(() -> e)));
    int at = 0;
    int event = 0;
    try {
      while (at < all.length) {
        int size = 1 + random.nextInt(random.nextBoolean() ? 8 : 400);
        // as vLLM writes: one event per chunk, which the reader takes in place
        int to = wholeEvents ? eventEnds.get(event++) : Math.min(all.length, at + size);
        feed(assembly, assembled, Buffer.buffer().appendBytes(all, at, to - at));
        reader.feed(Buffer.buffer().appendBytes(all, at, to - at));
        at = to;
      }
    } catch (SseFormatException refused) {
      seen.add("refused");
    }
    assertEquals(expected.subList(0, seen.size()), seen);
    if (!seen.contains("refused")) assertEquals(expected.size(), seen.size());
    assertEquals(seen, assembled, "the reading for an assembly gives the relay's events");
  }

  /** Feeds the assembly's reader until it refuses a frame, as a decode leg stops at its first malformed frame. */
  private static void feed(SseReader reader, List<String> seen, Buffer chunk) {
    if (seen.contains("refused")) return;
    try {
      reader.feed(chunk);
    } catch (SseFormatException refused) {
      seen.add("refused");
    }
  }

  /** Both readings of one frame's data; true when the scanner read it (then its event is Jackson's). */
  private boolean check(byte[] data) {
    byte[] event = event(data);
    String jackson = describe(() -> classifier.byJackson(event, 0, event.length, null));
    SseEvent fast = classifier.byScan(event, 0, event.length, null);
    String classified = describe(() -> classifier.classify(event, event.length));
    String text = new String(data, StandardCharsets.UTF_8);
    assertEquals(jackson, classified, () -> "classify differs from Jackson for " + text);
    checkTree(event, jackson, text);
    if (fast == null) {
      declined++;
      return false;
    }
    scanned++;
    assertEquals(jackson, describe(() -> fast), () -> "scanner differs from Jackson for " + text);
    return true;
  }

  /** The assembly's reading gives Jackson's event, and keeps the tree that parsing the relayed bytes gives. */
  private void checkTree(byte[] event, String jackson, String text) {
    SseEvent[] read = new SseEvent[1];
    assertEquals(jackson, describe(() -> read[0] = tree.byTree(event, 0, event.length, null)),
        () -> "the tree reading differs from Jackson for " + text);
    SseFrame frame = read[0] instanceof SseEvent.Output o ? o.frame() : read[0] instanceof SseEvent.Metadata m ? m.frame() : null;
    if (frame == null) return;
    assertEquals(new SseFrame(frame.wire(), null, null).json(), frame.json(), () -> "the kept tree differs for " + text);
    assertSame(frame.json(), frame.json(), "the tree is read once");
  }

  private boolean jacksonRefuses(byte[] data) {
    byte[] event = event(data);
    return describe(() -> classifier.byJackson(event, 0, event.length, null)).equals("refused");
  }

  private static String describe(java.util.function.Supplier<SseEvent> reading) {
    SseEvent event;
    try {
      event = reading.get();
    } catch (SseFormatException e) {
      return "refused";
    }
    if (event instanceof SseEvent.Done) return "done";
    if (event instanceof SseEvent.ErrorFrame error) return "error " + error.error().encode() + " " + error.data();
    SseFrame frame = event instanceof SseEvent.Output o ? o.frame() : ((SseEvent.Metadata) event).frame();
    String kind = event instanceof SseEvent.Output o ? "output [" + o.text() + "]" : "metadata";
    return kind + " finish=" + frame.finishReason() + " usage=" + (frame.usage() == null ? null : frame.usage().encode())
        + " wire=" + frame.wire().toString(StandardCharsets.ISO_8859_1);
  }

  private static byte[] event(byte[] data) {
    byte[] event = new byte[data.length + SseFrame.PREFIX + SseFrame.SUFFIX];
    System.arraycopy("data: ".getBytes(StandardCharsets.US_ASCII), 0, event, 0, SseFrame.PREFIX);
    System.arraycopy(data, 0, event, SseFrame.PREFIX, data.length);
    event[event.length - 2] = '\n';
    event[event.length - 1] = '\n';
    return event;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Frames in the shapes vLLM streams (docs/vllm.md), with random values. */
  static final class VllmFrames {
    static String any(Random r) {
      JsonObject frame = switch (r.nextInt(10)) {
        case 0, 1, 2 -> completion(r);
        case 3, 4, 5, 6 -> chat(r);
        case 7 -> usageOnly(r);
        case 8 -> new JsonObject().put("error", new JsonObject().put("message", text(r)).put("type", "BadRequestError")
            .put("param", null).put("code", 400));
        default -> r.nextBoolean() ? chat(r) : completion(r);
      };
      String json = r.nextInt(4) == 0 ? asciiOnly(frame.encode()) : frame.encode();
      return r.nextInt(6) == 0 ? frame.encodePrettily() : json;
    }

    static JsonObject completion(Random r) {
      JsonObject choice = new JsonObject().put("index", r.nextInt(3)).put("text", text(r));
      choice.put("logprobs", r.nextBoolean() ? null : new JsonObject()
          .put("text_offset", new JsonArray().add(r.nextInt(1000)))
          .put("token_logprobs", new JsonArray().add(-r.nextDouble() * 10).add(r.nextInt(3) == 0 ? -1.5e-7 : -0.25))
          .put("tokens", new JsonArray().add(text(r)))
          .put("top_logprobs", new JsonArray().add(new JsonObject().put(text(r), -r.nextDouble()).put("x", -2.0))));
      choice.put("finish_reason", finish(r)).put("stop_reason", stopReason(r));
      if (r.nextBoolean()) choice.put("token_ids", new JsonArray().add(r.nextInt(150000)).add(r.nextInt(150000)));
      if (r.nextBoolean()) choice.put("prompt_token_ids", r.nextBoolean() ? null : new JsonArray().add(1).add(2));
      JsonObject frame = head(r, "text_completion").put("choices", new JsonArray().add(choice));
      if (r.nextBoolean()) frame.put("usage", null);
      return frame;
    }

    static JsonObject chat(Random r) {
      JsonObject delta = new JsonObject();
      switch (r.nextInt(6)) {
        case 0 -> delta.put("role", "assistant").put("content", "");
        case 1 -> delta.put("content", text(r));
        case 2 -> delta.put(r.nextBoolean() ? "reasoning" : "reasoning_content", text(r));
        case 3 -> delta.put("tool_calls", new JsonArray().add(toolCall(r)).add(r.nextBoolean() ? toolCall(r) : null));
        case 4 -> delta.put("tool_calls", new JsonArray());
        default -> { }
      }
      if (delta.getValue("tool_calls") instanceof JsonArray calls) calls.getList().removeIf(java.util.Objects::isNull);
      JsonObject choice = new JsonObject().put("index", 0).put("delta", delta);
      choice.put("logprobs", r.nextBoolean() ? null : new JsonObject().put("content", new JsonArray().add(new JsonObject()
          .put("token", text(r)).put("logprob", -r.nextDouble()).put("bytes", new JsonArray().add(104).add(195).add(169))
          .put("top_logprobs", new JsonArray().add(new JsonObject().put("token", "x").put("logprob", -9999.0).put("bytes", null))))));
      choice.put("finish_reason", finish(r));
      if (r.nextBoolean()) choice.put("stop_reason", stopReason(r));
      if (r.nextInt(4) == 0) choice.put("token_ids", new JsonArray().add(r.nextInt(150000)));
      JsonObject frame = head(r, "chat.completion.chunk").put("choices", new JsonArray().add(choice));
      if (r.nextInt(8) == 0) frame.put("system_fingerprint", null).put("service_tier", null);
      return frame;
    }

    static JsonObject usageOnly(Random r) {
      return head(r, r.nextBoolean() ? "chat.completion.chunk" : "text_completion").put("choices", new JsonArray())
          .put("usage", new JsonObject().put("prompt_tokens", r.nextInt(100)).put("total_tokens", 100)
              .put("completion_tokens", r.nextInt(50)).put("prompt_tokens_details", null));
    }

    static JsonObject toolCall(Random r) {
      JsonObject function = new JsonObject().put("arguments", r.nextBoolean() ? "{\"city\": \"" + text(r) + "\"}" : text(r));
      JsonObject call = new JsonObject().put("index", r.nextInt(2));
      if (r.nextBoolean()) {
        call.put("id", "chatcmpl-tool-" + Long.toHexString(r.nextLong())).put("type", "function");
        function.put("name", "get_weather");
      }
      return call.put("function", function);
    }

    static JsonObject head(Random r, String object) {
      return new JsonObject().put("id", (object.startsWith("chat") ? "chatcmpl-" : "cmpl-") + Long.toHexString(r.nextLong()))
          .put("object", object).put("created", 1764547200 + r.nextInt(1000)).put("model", "Qwen/Qwen3-0.6B");
    }

    static Object finish(Random r) {
      return switch (r.nextInt(5)) {
        case 0 -> "stop";
        case 1 -> "length";
        case 2 -> "tool_calls";
        default -> null;
      };
    }

    static Object stopReason(Random r) {
      return switch (r.nextInt(4)) {
        case 0 -> "</s>";
        case 1 -> 151643;
        default -> null;
      };
    }

    private static final String[] PIECES = {"The", " narwhal", " is", ",", "\n", "\t", "\"quoted\"", "back\\slash", "/",
        "caf\u00e9", "\u6f22\u5b57", "\ud83d\ude00", "\u0000", "\u001f", "\u2028", "\ud800", "", " ", "}", "{", "]", "[",
        ":", "\\u0041", "<think>", "</think>", "\u00ff\u0100", "\uffff", "a".repeat(300)};

    static String text(Random r) {
      StringBuilder s = new StringBuilder();
      int n = r.nextInt(4);
      for (int i = 0; i < n; i++) s.append(PIECES[r.nextInt(PIECES.length)]);
      return s.toString();
    }

    /** As Python's {@code json.dumps} writes (ensure_ascii): every non-ASCII character as a {@code \\uXXXX} escape. */
    static String asciiOnly(String json) {
      StringBuilder out = new StringBuilder();
      for (char c : json.toCharArray()) {
        if (c < 0x80) out.append(c); else out.append(String.format("\\u%04x", (int) c));
      }
      return out.toString();
    }

    /** Requests that make the simulator stream each of vLLM's shapes. */
    static List<JsonObject> requests() {
      JsonArray tools = new JsonArray().add(tool("get_weather")).add(tool("get_time"));
      List<JsonObject> requests = new ArrayList<>();
      JsonObject usage = new JsonObject().put("include_usage", true);
      requests.add(req("/v1/completions", new JsonObject().put("prompt", "The narwhal is").put("max_tokens", 24)));
      requests.add(req("/v1/completions", new JsonObject().put("prompt", "x").put("max_tokens", 16).put("logprobs", 2)
          .put("stream_options", usage).put("return_token_ids", true)));
      requests.add(req("/v1/completions", new JsonObject().put("prompt", "y").put("max_tokens", 16).put("stop", "e")));
      requests.add(req("/v1/chat/completions", chat("hello").put("max_tokens", 24).put("stream_options", usage)));
      requests.add(req("/v1/chat/completions", chat("weather?").put("tools", tools).put("max_tokens", 24)));
      requests.add(req("/v1/chat/completions", chat("weather?").put("tools", tools).put("tool_choice", "required")
          .put("parallel_tool_calls", false).put("max_tokens", 24)));
      requests.add(req("/v1/chat/completions", chat("why?").put("logprobs", true).put("top_logprobs", 2).put("max_tokens", 12)));
      requests.add(req("/v1/chat/completions", chat("no thinking").put("max_tokens", 12)
          .put("chat_template_kwargs", new JsonObject().put("enable_thinking", false))));
      return requests;
    }

    private static JsonObject chat(String content) {
      return new JsonObject().put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", content)));
    }

    private static JsonObject tool(String name) {
      return new JsonObject().put("type", "function").put("function", new JsonObject().put("name", name)
          .put("parameters", new JsonObject().put("type", "object")));
    }

    private static JsonObject req(String path, JsonObject body) {
      return new JsonObject().put("path", path).put("body", body.put("model", SimEngineOptions.DEFAULT_MODEL).put("stream", true));
    }
  }

  /** Byte-level damage: deletions, insertions and replacements from bytes that matter to JSON and UTF-8, cuts. */
  static final class Mutations {
    private static final byte[] INTERESTING = {'"', '\\', '{', '}', '[', ']', ',', ':', '0', '1', '-', '+', '.', 'e', 'E',
        '/', '*', 'u', 'n', 't', 'f', ' ', '\n', '\t', 0, 0x1f, 0x7f, (byte) 0x80, (byte) 0xbf, (byte) 0xc0, (byte) 0xc3,
        (byte) 0xe0, (byte) 0xed, (byte) 0xef, (byte) 0xf0, (byte) 0xf4, (byte) 0xf5, (byte) 0xff};

    static byte[] mutate(Random r, byte[] data) {
      byte[] out = data;
      int n = 1 + r.nextInt(3);
      for (int k = 0; k < n && out.length > 0; k++) {
        int at = r.nextInt(out.length);
        switch (r.nextInt(5)) {
          case 0 -> out = splice(out, at, 1, new byte[0]);
          case 1 -> out = splice(out, at, 0, new byte[] {pick(r)});
          case 2 -> out = splice(out, at, 1, new byte[] {pick(r)});
          case 3 -> out = java.util.Arrays.copyOf(out, at);
          default -> {
            int len = Math.min(out.length - at, 1 + r.nextInt(12));
            out = splice(out, at, 0, java.util.Arrays.copyOfRange(out, at, at + len));
          }
        }
      }
      return out;
    }

    private static byte pick(Random r) {
      return INTERESTING[r.nextInt(INTERESTING.length)];
    }

    private static byte[] splice(byte[] in, int at, int remove, byte[] insert) {
      byte[] out = new byte[in.length - remove + insert.length];
      System.arraycopy(in, 0, out, 0, at);
      System.arraycopy(insert, 0, out, at, insert.length);
      System.arraycopy(in, at + remove, out, at + insert.length, in.length - at - remove);
      return out;
    }
  }

  /** Random JSON objects whose keys are mostly the ones the readings look at, with values of every type. */
  static final class RandomJson {
    private static final String[] KEYS = {"choices", "delta", "text", "content", "reasoning", "reasoning_content",
        "tool_calls", "finish_reason", "usage", "error", "index", "x", "te\\u0078t", "choices"};

    static String object(Random r, int depth) {
      StringBuilder s = new StringBuilder("{");
      int n = r.nextInt(depth == 0 ? 5 : 3);
      for (int i = 0; i < n; i++) {
        if (i > 0) s.append(r.nextInt(8) == 0 ? " , " : ",");
        s.append('"').append(KEYS[r.nextInt(KEYS.length)]).append('"').append(r.nextBoolean() ? ":" : " : ");
        s.append(value(r, depth + 1));
      }
      return s.append('}').toString();
    }

    static String value(Random r, int depth) {
      int kind = depth > 5 ? 4 + r.nextInt(5) : r.nextInt(9);
      return switch (kind) {
        case 0, 1 -> object(r, depth);
        case 2, 3 -> {
          StringBuilder a = new StringBuilder("[");
          int n = r.nextInt(4);
          for (int i = 0; i < n; i++) a.append(i > 0 ? "," : "").append(value(r, depth + 1));
          yield a.append(']').toString();
        }
        case 4, 5 -> new JsonArray().add(VllmFrames.text(r)).encode().replaceAll("^\\[|\\]$", "");
        case 6 -> new String[] {"0", "-1", "3.25", "-2.5e-3", "1E9", "123456789012345678901234567890"}[r.nextInt(6)];
        case 7 -> new String[] {"true", "false", "null"}[r.nextInt(3)];
        default -> "null";
      };
    }
  }
}
