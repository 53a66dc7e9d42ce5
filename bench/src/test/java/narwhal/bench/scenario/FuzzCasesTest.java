package narwhal.bench.scenario;

import io.vertx.core.json.JsonObject;
import narwhal.bench.load.RawHttp;
import narwhal.bench.process.NginxProcess;
import narwhal.bench.process.SimBench;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FuzzCasesTest {

  @Test
  void casesHaveUniqueNamesAndScripts() {
    List<FuzzCases.Case> cases = FuzzCases.all(4000);
    Set<String> names = new HashSet<>();
    for (FuzzCases.Case c : cases) {
      assertTrue(names.add(c.name()), "duplicate case " + c.name());
      assertTrue(c.script().answers() >= 1);
    }
    assertTrue(cases.size() > 40);
  }

  /** Every request-smuggling case carries a second request behind it and waits for two answers. */
  @Test
  void smugglingCasesPipelineASecondRequest() {
    List<FuzzCases.Case> family = FuzzCases.all(4000).stream().filter(c -> c.group().equals("request smuggling")).toList();
    assertTrue(family.size() >= 50, "cases: " + family.size());
    for (FuzzCases.Case c : family) {
      assertTrue(c.expect() == FuzzCases.Expect.REFUSED_ALONE || c.expect() == FuzzCases.Expect.BOTH_SERVED, c.name());
      assertEquals(2, c.script().answers(), c.name());
      String sent = c.script().steps().get(0).bytes().toString(StandardCharsets.ISO_8859_1);
      assertTrue(sent.endsWith("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), c.name());
    }
  }

  @Test
  void bigBodiesAreValidJsonOfTheRequestedSize() {
    byte[] body = FuzzCases.bigJson(100_000);
    assertTrue(Math.abs(body.length - 100_000) < 8);
    assertEquals(SimBench.MODEL, new JsonObject(new String(body, StandardCharsets.UTF_8)).getString("model"));
  }

  @Test
  void slowSendersTrickleForLongerThanTheBound() {
    FuzzCases.Case slow = FuzzCases.all(4000).stream().filter(c -> c.name().startsWith("headers at 1 byte")).findFirst().orElseThrow();
    long total = slow.script().steps().stream().mapToLong(RawHttp.Step::pauseMs).sum();
    assertTrue(total > 4000, "trickle lasts " + total + " ms");
  }

  @Test
  void nginxConfigTurnsBufferingOffAndProxiesTheUpstream() {
    String conf = NginxProcess.config(java.nio.file.Path.of("/tmp/x"), 8080, 9090, 1, false);
    assertTrue(conf.contains("proxy_buffering off;"));
    assertTrue(conf.contains("server 127.0.0.1:9090;"));
    assertTrue(conf.contains("listen 127.0.0.1:8080"));
    assertTrue(conf.contains("daemon off;"));
    assertTrue(!conf.contains("user root;"));
  }
}
