package narwhal.bench.probe;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;
import narwhal.bench.report.Fmt;
import narwhal.bench.report.ResultTable;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Summarises the {@code jdk.ExecutionSample} events of a flight recording (what {@code jfr print --events
 * jdk.ExecutionSample} lists one by one): the methods on top of the stack most often (self time), the
 * methods present anywhere in the stack most often (inclusive), the nearest Narwhal frame of each sample
 * (which of our code is responsible, including the library code it calls) and samples per thread.
 */
public final class JfrSummary {
  private final long samples;
  private final Map<String, Long> self;
  private final Map<String, Long> inclusive;
  private final Map<String, Long> narwhal;
  private final Map<String, Long> threads;
  private final Map<String, Long> packages;

  private JfrSummary(long samples, Map<String, Long> self, Map<String, Long> inclusive, Map<String, Long> narwhal,
                     Map<String, Long> threads, Map<String, Long> packages) {
    this.packages = packages;
    this.samples = samples;
    this.self = self;
    this.inclusive = inclusive;
    this.narwhal = narwhal;
    this.threads = threads;
  }

  public static JfrSummary read(Path recording) throws IOException {
    long samples = 0;
    Map<String, Long> self = new HashMap<>();
    Map<String, Long> inclusive = new HashMap<>();
    Map<String, Long> narwhal = new HashMap<>();
    Map<String, Long> threads = new HashMap<>();
    Map<String, Long> packages = new HashMap<>();
    try (RecordingFile file = new RecordingFile(recording)) {
      while (file.hasMoreEvents()) {
        RecordedEvent e = file.readEvent();
        if (!"jdk.ExecutionSample".equals(e.getEventType().getName())) continue;
        RecordedStackTrace stack = e.getStackTrace();
        if (stack == null || stack.getFrames().isEmpty()) continue;
        samples++;
        String thread = e.getThread("sampledThread") == null ? "?" : e.getThread("sampledThread").getJavaName();
        threads.merge(thread == null ? "?" : thread.replaceAll("-\\d+$", "-N"), 1L, Long::sum);
        List<RecordedFrame> frames = stack.getFrames();
        self.merge(name(frames.get(0)), 1L, Long::sum);
        packages.merge(area(name(frames.get(0))), 1L, Long::sum);
        Set<String> seen = new HashSet<>();
        String topNarwhal = null;
        for (RecordedFrame f : frames) {
          String n = name(f);
          if (seen.add(n)) inclusive.merge(n, 1L, Long::sum);
          if (topNarwhal == null && n.startsWith("narwhal.")) topNarwhal = n;
        }
        narwhal.merge(topNarwhal == null ? "(no Narwhal frame: Vert.x/Netty/JVM work)" : topNarwhal, 1L, Long::sum);
      }
    }
    return new JfrSummary(samples, self, inclusive, narwhal, threads, packages);
  }

  /** The library or area a method belongs to, for a coarse "where does the CPU go" view of self time. */
  static String area(String method) {
    String[][] areas = {{"com.fasterxml.jackson", "Jackson (JSON parse/encode)"}, {"io.vertx.core.json", "Vert.x JsonObject"},
        {"io.micrometer", "Micrometer (metrics)"}, {"io.vertx.micrometer", "Micrometer (metrics)"}, {"io.netty", "Netty (I/O, buffers)"},
        {"io.vertx.core.http", "Vert.x HTTP"}, {"io.vertx.ext.web", "Vert.x Web (router, body)"}, {"io.vertx.core.eventbus", "Vert.x event bus"},
        {"io.vertx", "Vert.x (other)"}, {"narwhal.", "Narwhal"}, {"java.util.HashMap", "java.util maps"},
        {"java.util.LinkedHashMap", "java.util maps"}, {"java.util.concurrent", "java.util.concurrent"},
        {"java.lang.String", "java.lang strings"}, {"sun.nio", "JDK NIO"}, {"java.", "JDK (other)"}, {"jdk.", "JDK (other)"}};
    for (String[] a : areas) if (method.startsWith(a[0])) return a[1];
    return "other";
  }

  private static String name(RecordedFrame f) {
    RecordedMethod m = f.getMethod();
    if (m == null) return "?";
    return m.getType().getName() + "." + m.getName();
  }

  public long samples() {
    return samples;
  }

  public ResultTable table(String title, Map<String, Long> counts, int top) {
    ResultTable t = new ResultTable(title, "samples", "share", "method");
    top(counts, top).forEach(e -> t.row(String.valueOf(e.getValue()), Fmt.num(100.0 * e.getValue() / Math.max(1, samples), 1) + "%",
        e.getKey()));
    return t;
  }

  public List<ResultTable> tables(int top) {
    return List.of(table("self time by area (top frame's library), " + samples + " samples", packages, 12),
        table("hot methods, self (top of stack)", self, top),
        table("hot methods, inclusive (anywhere on the stack)", inclusive, top),
        table("nearest Narwhal frame of each sample", narwhal, top),
        table("samples per thread", threads, 8));
  }

  public JsonObject toJson(int top) {
    return new JsonObject().put("samples", samples).put("self", json(self, top)).put("inclusive", json(inclusive, top))
        .put("narwhal", json(narwhal, top)).put("threads", json(threads, top)).put("areas", json(packages, top));
  }

  private static JsonArray json(Map<String, Long> counts, int top) {
    JsonArray out = new JsonArray();
    top(counts, top).forEach(e -> out.add(new JsonObject().put("method", e.getKey()).put("samples", e.getValue())));
    return out;
  }

  private static List<Map.Entry<String, Long>> top(Map<String, Long> counts, int top) {
    return counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(top)
        .collect(Collectors.toList());
  }
}
