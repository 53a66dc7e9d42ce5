package narwhal.sim;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;
import io.vertx.junit5.VertxExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The connection faults, seen on a raw socket (and by a plain HTTP client) as a client of a misbehaving engine sees them. */
@ExtendWith(VertxExtension.class)
class ConnectionFaultsTest {

  private static final String GET_MODELS = "GET /v1/models HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";

  private Vertx vertx;
  private MutableClock clock;
  private SimEngine engine;
  private SimClient http;
  private NetClient net;

  @BeforeEach
  void start(Vertx vertx) {
    this.vertx = vertx;
    clock = new MutableClock();
    engine = SimEngine.start(vertx, new SimEngineOptions().setName("e"), clock).await();
    http = new SimClient(vertx);
    net = vertx.createNetClient();
  }

  /** What one raw exchange got: each buffer as it arrived, and whether the engine closed the socket. */
  record Raw(List<Buffer> reads, boolean closed, Throwable failure) {
    /** Ended without a byte of answer: closed by the engine, or reset before the connect had completed on this side. */
    boolean refused() {
      return reads.isEmpty() && (closed || failure != null);
    }

    String text() {
      StringBuilder s = new StringBuilder();
      reads.forEach(b -> s.append(b.toString()));
      return s.toString();
    }
  }

  private NetSocket connect() {
    return net.connect(engine.port(), "127.0.0.1").await();
  }

  /** Writes {@code request} on a fresh socket and collects what comes back until the engine closes it. */
  private Raw exchange(String request) throws Exception {
    List<Buffer> reads = new ArrayList<>();
    Promise<Raw> done = Promise.promise();
    vertx.getOrCreateContext().runOnContext(v -> net.connect(engine.port(), "127.0.0.1").onComplete(ar -> {
      if (ar.failed()) {
        done.tryComplete(new Raw(reads, false, ar.cause()));
        return;
      }
      NetSocket socket = ar.result();
      Throwable[] failure = new Throwable[1];
      socket.handler(reads::add);
      socket.exceptionHandler(err -> failure[0] = err);
      socket.closeHandler(c -> done.tryComplete(new Raw(reads, true, failure[0])));
      socket.write(request);
    }));
    return done.future().await(30, TimeUnit.SECONDS);
  }

  @Test
  void acceptNoReadNeverAnswersWhileTheEngineServesOthers() throws Exception {
    engine.faults().add(new JsonObject().put("kind", "accept_no_read"));
    List<Buffer> reads = new ArrayList<>();
    NetSocket silent = connect();
    silent.handler(reads::add);
    String rid = "never-read-1";
    silent.write("POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-request-id: " + rid
        + "\r\ncontent-length: " + SimClient.completion("hello").toBuffer().length() + "\r\n\r\n" + SimClient.completion("hello").encode()).await();
    assertTrue(http.eventually(() -> engine.faults().list().isEmpty()), "the engine accepted the connection and it took the rule");

    SimClient.Reply other = http.post(engine, "/v1/completions", SimClient.completion("hello"), "x-request-id", "served-1");
    assertEquals(200, other.status, "a later connection is served");
    assertTrue(engine.requests().stream().noneMatch(r -> rid.equals(r.getString("request_id"))),
        "the unread connection's request never reached the engine: " + engine.requests());
    assertEquals(0, reads.size(), "nothing was written back on the unread connection");
    silent.close().await();
  }

  @Test
  void trickleHeadersSendsTheHeadersOneByteAtATimeThenTheBody() throws Exception {
    engine.faults().add(new JsonObject().put("kind", "trickle_headers").put("interval_ms", 5));
    Raw raw = exchange(GET_MODELS);
    String text = raw.text();
    int end = text.indexOf("\r\n\r\n") + 4;
    assertTrue(end > 4 && text.startsWith("HTTP/1.1 200"), text);
    assertEquals(engine.config().getModel(), new JsonObject(text.substring(end)).getJsonArray("data").getJsonObject(0).getString("id"));
    int headerReads = 0;
    int seen = 0;
    for (Buffer b : raw.reads()) {
      if (seen >= end) {
        break;
      }
      headerReads++;
      seen += b.length();
    }
    // one byte is written per interval; a busy reader may find two or three waiting, never the whole head at once
    assertTrue(headerReads >= end / 4, end + " header bytes arrived in only " + headerReads + " reads");

    Raw plain = exchange(GET_MODELS);
    assertTrue(plain.reads().size() < end / 4, "the rule was used up: the next connection is answered at once");
  }

  @Test
  void refuseStormResetsTheNextConnectionsThenAcceptsAgain() throws Exception {
    engine.faults().add(new JsonObject().put("kind", "refuse_storm").put("count", 2));
    Raw raw = exchange(GET_MODELS);
    assertTrue(raw.refused(), "the first connection is closed without an answer: " + raw.text());
    SimClient.Reply second = http.get(engine, "/v1/models");
    assertEquals(0, second.status, "the storm's second connection is refused too");
    assertNotNull(second.failure);
    assertEquals(200, http.get(engine, "/v1/models").status, "after the storm the engine accepts again");
    assertEquals(0, engine.requests().size(), "no refused connection delivered a request");
  }

  @Test
  void refuseStormForSecondsEndsOnTheEngineClock() throws Exception {
    engine.faults().add(new JsonObject().put("kind", "refuse_storm").put("seconds", 5).put("mode", "close"));
    for (int i = 0; i < 3; i++) {
      Raw raw = exchange(GET_MODELS);
      assertTrue(raw.refused(), "refused while the storm lasts: " + raw.text());
    }
    assertEquals("refuse_storm", engine.faults().list().get(0).kind());
    clock.advance(java.time.Duration.ofSeconds(5));
    assertEquals(200, http.get(engine, "/v1/models").status);
    assertTrue(engine.faults().list().isEmpty());
  }

  @Test
  void connectionFaultsTakeNoPhaseModelOrHeaderForm() {
    assertThrows(IllegalArgumentException.class, () -> new FaultRule(new JsonObject().put("kind", "accept_no_read").put("phase", "decode")));
    assertThrows(IllegalArgumentException.class, () -> new FaultRule(new JsonObject().put("kind", "refuse_storm").put("model", "m")));
    assertThrows(IllegalArgumentException.class, () -> new FaultRule(new JsonObject().put("kind", "refuse_storm").put("mode", "drop")));
    assertThrows(IllegalArgumentException.class, () -> new FaultRule(new JsonObject().put("kind", "trickle_headers").put("interval_ms", 0)));
    SimClient.Reply header = http.post(engine, "/v1/completions", SimClient.completion("hello"), "x-sim-fault", "trickle_headers");
    assertEquals(400, header.status, header.text);
    assertTrue(header.text.contains("POST /sim/faults"), header.text);
    SimClient.Reply added = http.post(engine, "/sim/faults", new JsonObject().put("kind", "refuse_storm").put("count", 3));
    assertEquals(200, added.status, added.text);
    assertEquals(3, engine.faults().list().get(0).count());
  }
}
