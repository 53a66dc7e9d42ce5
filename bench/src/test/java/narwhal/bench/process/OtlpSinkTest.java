package narwhal.bench.process;

import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import static org.junit.jupiter.api.Assertions.assertEquals;

class OtlpSinkTest {

  @Test
  void countsEachExportAndItsBytesAndAnswersAsACollectorDoes() throws Exception {
    try (OtlpSink sink = OtlpSink.start()) {
      HttpClient client = HttpClient.newHttpClient();
      for (int size : new int[] {100, 2_000}) {
        HttpResponse<byte[]> answer = client.send(HttpRequest.newBuilder(URI.create(sink.url() + "/v1/traces"))
            .header("content-type", "application/x-protobuf")
            .POST(HttpRequest.BodyPublishers.ofByteArray(new byte[size])).build(), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, answer.statusCode());
        assertEquals("application/x-protobuf", answer.headers().firstValue("content-type").orElse(""));
      }
      assertEquals(2, sink.exports());
      assertEquals(2_100, sink.bytes());
    }
  }
}
