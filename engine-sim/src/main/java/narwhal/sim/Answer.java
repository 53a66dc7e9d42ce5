package narwhal.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What one request generates, cut into the deltas vLLM streams: text clipped at a {@code stop} string (held back
 * by the longest stop string's length minus one while streaming, as vLLM's detokenizer does, but never across the end
 * of reasoning) with its
 * {@code stop_reason}; reasoning before content or tool calls when the engine runs a reasoning parser (unless the
 * request sets {@code chat_template_kwargs.enable_thinking: false}); tool calls when the request carries tools; per-token logprobs and token ids when asked. The same deltas, concatenated, make the
 * non-streaming answer, so both modes agree by construction.
 */
final class Answer {

  enum Kind { CONTENT, REASONING, TOOL_HEADER, TOOL_ARGUMENTS }

  /** One streamed delta: its kind and text, the output token behind it ({@code -1}: none) and its tool call index. */
  record Delta(Kind kind, String text, int token, int call) {
  }

  private final CompletionRequest req;
  private final long hash;
  private final List<String> tokens;
  private final List<Delta> deltas = new ArrayList<>();
  private final String finishReason;
  private final String stopReason;
  private final String reasoningField;

  private Answer(CompletionRequest req, Generator.Output output, String reasoningField) {
    this.req = req;
    this.hash = Generator.hash(req.prompt, req.seed, req.temperature);
    this.reasoningField = reasoningField;
    List<String> generated = output.tokens();
    boolean reasons = req.chat && req.thinking && !reasoningField.isEmpty();
    if (!req.toolCalls.isEmpty()) {
      this.tokens = generated;
      // vLLM: "tool_calls" for auto tool choice; a named choice keeps the output's reason; "required" says
      // "tool_calls" when the output stopped by itself
      this.finishReason = "named".equals(req.toolChoice) ? output.finishReason()
        : "required".equals(req.toolChoice) && !"stop".equals(output.finishReason()) ? output.finishReason() : "tool_calls";
      this.stopReason = null;
      int reasoningTokens = reasons ? (generated.size() + 1) / 2 : 0;
      for (int i = 0; i < reasoningTokens; i++) {
        deltas.add(new Delta(Kind.REASONING, generated.get(i), i, 0));
      }
      toolDeltas(reasoningTokens);
      return;
    }
    StringBuilder text = new StringBuilder();
    String stopped = null;
    int cut = -1;
    int kept = generated.size();
    for (int i = 0; i < generated.size() && stopped == null; i++) {
      int before = text.length();
      text.append(generated.get(i));
      for (String stop : req.stop) {
        int at = text.indexOf(stop, Math.max(0, before - stop.length() + 1));
        if (at >= 0 && (cut < 0 || at < cut)) {
          cut = at;
          stopped = stop;
          kept = i + 1;
        }
      }
    }
    this.tokens = generated.subList(0, kept);
    this.finishReason = stopped != null ? "stop" : output.finishReason();
    this.stopReason = stopped;
    String visible = stopped != null ? text.substring(0, cut) : text.toString();
    int holdBack = req.stop.stream().mapToInt(String::length).max().orElse(1) - 1;
    int reasoningTokens = reasons ? (tokens.size() + 1) / 2 : 0;
    int emitted = 0;
    int length = 0;
    for (int i = 0; i < tokens.size(); i++) {
      length += tokens.get(i).length();
      boolean last = i == tokens.size() - 1;
      boolean lastReasoning = i == reasoningTokens - 1;
      int end = last ? visible.length()
        : Math.max(emitted, Math.min(visible.length(), lastReasoning ? length : length - holdBack));
      deltas.add(new Delta(i < reasoningTokens ? Kind.REASONING : Kind.CONTENT, visible.substring(emitted, end), i, 0));
      emitted = end;
    }
  }

  static Answer of(CompletionRequest req, Generator.Output output, String reasoningField) {
    return new Answer(req, output, reasoningField);
  }

  /**
   * After any reasoning (tokens before {@code first}), each call: a header delta (id, type, name, empty arguments),
   * then argument fragments, one per token.
   */
  private void toolDeltas(int first) {
    int calls = req.toolCalls.size();
    int n = tokens.size() - first;
    for (int c = 0; c < calls; c++) {
      deltas.add(new Delta(Kind.TOOL_HEADER, "", -1, c));
      int from = first + c * n / calls;
      int to = first + (c + 1) * n / calls;
      if (from == to) {
        deltas.add(new Delta(Kind.TOOL_ARGUMENTS, "{\"text\": \"\"}", -1, c));
      }
      for (int t = from; t < to; t++) {
        String fragment = (t == from ? "{\"text\": \"" : "") + tokens.get(t) + (t == to - 1 ? "\"}" : "");
        deltas.add(new Delta(Kind.TOOL_ARGUMENTS, fragment, t, c));
      }
    }
  }

  List<Delta> deltas() {
    return deltas;
  }

  int completionTokens() {
    return tokens.size();
  }

  String finishReason() {
    return finishReason;
  }

  String stopReason() {
    return stopReason;
  }

  String reasoningField() {
    return reasoningField.isEmpty() ? "reasoning" : reasoningField;
  }

  /** The non-streaming text of one kind: the deltas' texts joined; null when none of that kind came. */
  String joined(Kind kind) {
    StringBuilder text = new StringBuilder();
    boolean any = false;
    for (Delta d : deltas) {
      if (d.kind() == kind) {
        any = true;
        text.append(d.text());
      }
    }
    return any ? text.toString() : null;
  }

  /** A delta as the fields of a chat {@code delta} object. */
  JsonObject chatDelta(Delta d) {
    switch (d.kind()) {
      case REASONING:
        return new JsonObject().put(reasoningField, d.text());
      case TOOL_HEADER:
        return new JsonObject().put("tool_calls", new JsonArray().add(new JsonObject().put("index", d.call())
          .put("id", toolCallId(d.call())).put("type", "function")
          .put("function", new JsonObject().put("name", req.toolCalls.get(d.call())).put("arguments", ""))));
      case TOOL_ARGUMENTS:
        return new JsonObject().put("tool_calls", new JsonArray().add(new JsonObject().put("index", d.call())
          .put("function", new JsonObject().put("arguments", d.text()))));
      default:
        return new JsonObject().put("content", d.text());
    }
  }

  /** {@code message.tool_calls} of the non-streaming answer. */
  JsonArray toolCalls() {
    JsonArray calls = new JsonArray();
    for (int c = 0; c < req.toolCalls.size(); c++) {
      StringBuilder arguments = new StringBuilder();
      for (Delta d : deltas) {
        if (d.kind() == Kind.TOOL_ARGUMENTS && d.call() == c) {
          arguments.append(d.text());
        }
      }
      calls.add(new JsonObject().put("id", toolCallId(c)).put("type", "function")
        .put("function", new JsonObject().put("name", req.toolCalls.get(c)).put("arguments", arguments.toString())));
    }
    return calls;
  }

  /** vLLM's {@code chatcmpl-tool-<32 hex>}, here derived from the generation so it is the same on every engine. */
  private String toolCallId(int call) {
    return "chatcmpl-tool-" + String.format("%016x%016x", Generator.hash("tool", hash, call), Generator.hash("call", hash, call));
  }

  /** Logprobs of the delta's token (null when logprobs were not asked or the delta has no token). */
  JsonObject logprobs(Delta d) {
    if (req.logprobs < 0 || d.token() < 0) {
      return null;
    }
    return req.chat ? new JsonObject().put("content", new JsonArray().add(chatLogprob(d.token())))
      : completionLogprobs(List.of(d.token()));
  }

  /** Logprobs of every output token, as the non-streaming answer carries them; null when not asked. */
  JsonObject logprobs() {
    if (req.logprobs < 0) {
      return null;
    }
    List<Integer> all = new ArrayList<>();
    for (int t = 0; t < tokens.size(); t++) {
      all.add(t);
    }
    if (!req.chat) {
      return completionLogprobs(all);
    }
    JsonArray content = new JsonArray();
    all.forEach(t -> content.add(chatLogprob(t)));
    return new JsonObject().put("content", content);
  }

  private JsonObject chatLogprob(int t) {
    String token = tokens.get(t);
    JsonArray top = new JsonArray();
    List<String> candidates = candidates(t);
    for (int k = 0; k < req.logprobs; k++) {
      String alt = candidates.get(k);
      top.add(new JsonObject().put("token", alt).put("logprob", logprob(t, k)).put("bytes", bytes(alt)));
    }
    return new JsonObject().put("token", token).put("logprob", logprob(t, 0)).put("bytes", bytes(token)).put("top_logprobs", top);
  }

  private JsonObject completionLogprobs(List<Integer> which) {
    JsonArray toks = new JsonArray();
    JsonArray lps = new JsonArray();
    JsonArray tops = new JsonArray();
    JsonArray offsets = new JsonArray();
    for (int t : which) {
      toks.add(tokens.get(t));
      lps.add(logprob(t, 0));
      JsonObject top = new JsonObject();
      List<String> candidates = candidates(t);
      for (int k = 0; k <= req.logprobs; k++) {
        top.put(candidates.get(k), logprob(t, k));
      }
      tops.add(top);
      int offset = 0;
      for (int i = 0; i < t; i++) {
        offset += tokens.get(i).length();
      }
      offsets.add(offset);
    }
    return new JsonObject().put("text_offset", offsets).put("token_logprobs", lps).put("tokens", toks).put("top_logprobs", tops);
  }

  /** The sampled token first, then distinct alternatives, deterministic per position. */
  private List<String> candidates(int t) {
    Set<String> out = new LinkedHashSet<>();
    out.add(tokens.get(t));
    for (int k = 1; out.size() <= req.logprobs; k++) {
      out.add(Generator.token(hash + k * 7919L, t));
    }
    return new ArrayList<>(out);
  }

  /** The k-th most likely token's logprob at position t: negative, decreasing with k, exact in JSON. */
  private double logprob(int t, int k) {
    int milli = 1 + (int) Math.floorMod(Generator.hash("lp", hash, t), 900L);
    return -(milli + 500 * k) / 1000.0;
  }

  private static JsonArray bytes(String token) {
    JsonArray out = new JsonArray();
    for (byte b : token.getBytes(StandardCharsets.UTF_8)) {
      out.add(b & 0xff);
    }
    return out;
  }

  /** The token id of output token t: a stable function of its text. */
  static int tokenId(String token) {
    return Math.floorMod(token.hashCode(), 151_000);
  }

  JsonArray tokenIds() {
    JsonArray ids = new JsonArray();
    tokens.forEach(t -> ids.add(tokenId(t)));
    return ids;
  }

  JsonArray tokenIds(Delta d) {
    return d.token() < 0 ? new JsonArray() : new JsonArray().add(tokenId(tokens.get(d.token())));
  }

  /**
   * vLLM's {@code prompt_logprobs} of a non-streamed answer: null for the first prompt token, then per token a map
   * from token id to {@code logprob}, {@code rank} and {@code decoded_token}: the prompt's own token (rank 1) and
   * the alternatives asked for. A function of the prompt alone, so every engine computes the same; null when not asked.
   */
  JsonArray promptLogprobs() {
    if (req.promptLogprobs == null) {
      return null;
    }
    String[] words = req.prompt.strip().split("\\s+");
    long promptHash = Generator.hash(req.prompt, 0, 0);
    JsonArray out = new JsonArray().addNull();
    for (int i = 1; i < words.length; i++) {
      JsonObject position = new JsonObject();
      int milli = 1 + (int) Math.floorMod(Generator.hash("plp", promptHash, i), 900L);
      position.put(String.valueOf(tokenId(words[i])), promptLogprob(-milli / 1000.0, 1, words[i]));
      for (int k = 1; position.size() <= req.promptLogprobs; k++) {
        String alt = Generator.token(promptHash + k * 7919L, i);
        if (!position.containsKey(String.valueOf(tokenId(alt)))) {
          position.put(String.valueOf(tokenId(alt)), promptLogprob(-(milli + 500 * position.size()) / 1000.0, position.size() + 1, alt));
        }
      }
      out.add(position);
    }
    return out;
  }

  private static JsonObject promptLogprob(double logprob, int rank, String token) {
    return new JsonObject().put("logprob", logprob).put("rank", rank).put("decoded_token", token);
  }

  JsonArray promptTokenIds() {
    JsonArray ids = new JsonArray();
    for (String word : req.prompt.strip().split("\\s+")) {
      ids.add(tokenId(word));
    }
    return ids;
  }
}
