package narwhal.router;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Folding chunks the simulator does not send: interleaved parallel tool-call deltas, fields no vLLM has yet, an
 * integer {@code stop_reason}, the engine's usage, and the router's own fields winning over the engine's.
 */
class AnswerAssemblyTest {

  @Test
  void chatChunksFoldFieldForFieldKeepingUnknownFields() {
    AnswerAssembly a = new AnswerAssembly(true);
    a.accept(new JsonObject("""
        {"id":"chatcmpl-e","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp1",
         "prompt_token_ids":[5,6],"x_future_top":{"a":1},
         "choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"""));
    a.accept(new JsonObject("""
        {"id":"chatcmpl-e","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,
         "delta":{"reasoning":"Think ","tool_calls":[{"index":1,"id":"call-b","type":"function","function":{"name":"b","arguments":""}}]},
         "logprobs":{"content":[{"token":"T","logprob":-0.5,"bytes":[84],"top_logprobs":[]}]},"token_ids":[1],"finish_reason":null}]}"""));
    a.accept(new JsonObject("""
        {"choices":[{"index":0,"delta":{"reasoning":"first.","x_future_delta":"q",
         "tool_calls":[{"index":0,"id":"call-a","type":"function","function":{"name":"a","arguments":"{\\"x\\":"}},
                       {"index":1,"function":{"arguments":"{}"}}]},
         "logprobs":{"content":[{"token":"f","logprob":-0.25,"bytes":[102],"top_logprobs":[]}]},"token_ids":[2,3],
         "x_future_choice":true,"finish_reason":null}]}"""));
    a.accept(new JsonObject("""
        {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},
         "finish_reason":"tool_calls","stop_reason":128009}],"service_tier":"default"}"""));
    a.accept(new JsonObject("""
        {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":4,"total_tokens":6,"x_usage":7},
         "kv_transfer_params":{"do_remote_prefill":true}}"""));

    JsonObject body = a.body("chatcmpl-router", 99, "model-x", "length", null);
    JsonObject expected = new JsonObject("""
        {"id":"chatcmpl-router","object":"chat.completion","created":99,"model":"model-x",
         "choices":[{"index":0,
           "message":{"role":"assistant","content":null,"refusal":null,"annotations":null,"audio":null,"function_call":null,
             "reasoning":"Think first.","x_future_delta":"q",
             "tool_calls":[{"id":"call-a","type":"function","function":{"name":"a","arguments":"{\\"x\\":1}"}},
                           {"id":"call-b","type":"function","function":{"name":"b","arguments":"{}"}}]},
           "logprobs":{"content":[{"token":"T","logprob":-0.5,"bytes":[84],"top_logprobs":[]},
                                  {"token":"f","logprob":-0.25,"bytes":[102],"top_logprobs":[]}]},
           "finish_reason":"tool_calls","stop_reason":128009,"token_ids":[1,2,3],"x_future_choice":true}],
         "system_fingerprint":"fp1","prompt_token_ids":[5,6],"x_future_top":{"a":1},"service_tier":"default",
         "usage":{"prompt_tokens":2,"completion_tokens":4,"total_tokens":6,"x_usage":7,"prompt_tokens_details":null},
         "prompt_logprobs":null,"kv_transfer_params":null}""");
    assertEquals(expected, body);
    assertNull(body.getValue("kv_transfer_params"), "the handoff descriptor is the router's, never the client's");
  }

  @Test
  void completionChunksJoinTextAndLogprobArrays() {
    AnswerAssembly a = new AnswerAssembly(false);
    a.accept(new JsonObject("""
        {"choices":[{"index":0,"text":" a","logprobs":{"text_offset":[0],"token_logprobs":[-1.0],"tokens":[" a"],
         "top_logprobs":[{" a":-1.0}]},"finish_reason":null,"stop_reason":null,"prompt_token_ids":[9],"token_ids":[4]}],
         "usage":null}"""));
    a.accept(new JsonObject("""
        {"choices":[{"index":0,"text":" b","logprobs":{"text_offset":[2],"token_logprobs":[-2.0],"tokens":[" b"],
         "top_logprobs":[{" b":-2.0}]},"finish_reason":"stop","stop_reason":"END","prompt_token_ids":null,"token_ids":[5]}],
         "usage":null}"""));
    JsonObject choice = a.body("cmpl-r", 1, "m", null, new JsonObject().put("completion_tokens", 2))
        .getJsonArray("choices").getJsonObject(0);
    assertEquals(" a b", choice.getString("text"));
    assertEquals(new JsonObject().put("text_offset", new JsonArray().add(0).add(2))
        .put("token_logprobs", new JsonArray().add(-1.0).add(-2.0)).put("tokens", new JsonArray().add(" a").add(" b"))
        .put("top_logprobs", new JsonArray().add(new JsonObject().put(" a", -1.0)).add(new JsonObject().put(" b", -2.0))),
        choice.getJsonObject("logprobs"));
    assertEquals("stop", choice.getString("finish_reason"));
    assertEquals("END", choice.getString("stop_reason"));
    assertEquals(new JsonArray().add(9), choice.getJsonArray("prompt_token_ids"));
    assertEquals(new JsonArray().add(4).add(5), choice.getJsonArray("token_ids"));
  }

  @Test
  void plainTextWithoutFinishOrUsageInTheStreamUsesTheStreamEnd() {
    AnswerAssembly a = new AnswerAssembly(true);
    a.accept(new JsonObject("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}"));
    JsonObject body = a.body("c", 1, "m", "length", new JsonObject().put("total_tokens", 3));
    JsonObject choice = body.getJsonArray("choices").getJsonObject(0);
    assertEquals("", choice.getJsonObject("message").getString("content"), "no output at all is empty content, as vLLM answers");
    assertEquals("length", choice.getString("finish_reason"));
    assertNull(choice.getValue("logprobs"));
    assertEquals(3, body.getJsonObject("usage").getInteger("total_tokens"));
  }
}
