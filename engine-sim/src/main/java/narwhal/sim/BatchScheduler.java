package narwhal.sim;

import io.vertx.core.Vertx;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * Continuous batching as vLLM's V1 scheduler does it: at most {@code max_num_seqs} sequences run, the rest wait in
 * arrival order; each engine step first serves the running sequences, then admits waiting ones, within a budget of
 * {@code max_num_batched_tokens} (a decode takes one token of it, a prefill a chunk of its uncached prompt), and
 * gives every scheduled sequence one step of progress. A step costs
 * {@code itl_ms + itl_per_running_ms × scheduled + ttft_per_prompt_token_ms × prefill tokens
 * + ttft_base_ms × prefills started}, waited for on a real timer; a step that costs nothing runs at once, so the
 * zero latency model never delays. Runs on the engine's event loop.
 */
final class BatchScheduler {

  /** What a sequence's owner hears, always on the engine's event loop. */
  interface Listener {
    /** The sequence left the waiting queue: it runs now. */
    void admitted();

    /** This step computes the next {@code tokens} of its prompt (a chunk, or the whole uncached prompt). */
    void chunkScheduled(int tokens);

    /** Its prompt is computed (the step that did so also samples its first token, if it has any). */
    void prefilled();

    /** One output token. */
    void token();
  }

  /** One request's progress through the batch. */
  static final class Sequence {
    final Listener listener;
    int prefillLeft;
    int tokensLeft;
    boolean paused;
    private boolean started;
    private boolean prefilled;
    private boolean released;
    private int chunk;
    private int prefillSteps;
    private double arrivedMs;
    private double firstTokenMs = -1;
    private double lastTokenMs = -1;

    Sequence(Listener listener, int prefillTokens, int tokens) {
      this.listener = listener;
      this.prefillLeft = prefillTokens;
      this.tokensLeft = tokens;
    }

    /** Simulated time from arrival to the end of its prefill step (ms); -1 before. */
    double ttftMs() {
      return firstTokenMs < 0 ? -1 : firstTokenMs - arrivedMs;
    }

    /** Simulated time from its first token to its last (ms); 0 with at most one token. */
    double decodeMs() {
      return lastTokenMs < 0 ? 0 : lastTokenMs - firstTokenMs;
    }

    /** Steps its prefill took (more than one when chunked). */
    int prefillSteps() {
      return prefillSteps;
    }

    private boolean schedulable() {
      return !paused && !released && (!prefilled || tokensLeft > 0);
    }
  }

  private final Vertx vertx;
  private final SimEngineOptions options;
  private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
  private final LinkedHashSet<Sequence> running = new LinkedHashSet<>();
  private boolean stepping;
  private boolean stepInFlight;
  private double inFlightMs;
  private double owedMs;
  private double simulatedMs;
  private volatile long steps;
  /** Steps timed while another was in flight: always 0 (one chain of steps, as an engine's one loop runs them). */
  private volatile long overlappingSteps;
  private volatile double slowdown = 1;

  BatchScheduler(Vertx vertx, SimEngineOptions options) {
    this.vertx = vertx;
    this.options = options;
  }

  /** Queues a sequence behind the waiting ones and runs steps if the engine is idle. */
  void submit(Sequence seq) {
    seq.arrivedMs = simulatedMs + (stepInFlight ? inFlightMs : 0);
    waiting.add(seq);
    kick();
  }

  /** Lets a paused sequence take part in the next step. */
  void resume(Sequence seq) {
    if (seq.paused) {
      seq.paused = false;
      kick();
    }
  }

  /** Removes the sequence wherever it is (finished, failed or abandoned); idempotent. */
  void release(Sequence seq) {
    if (seq == null || seq.released) {
      return;
    }
    seq.released = true;
    if (!running.remove(seq)) {
      waiting.remove(seq);
    }
    kick();
  }

  /** Multiplies the cost of every later step ({@code POST /sim/slowdown}): 1 is the latency model as configured. */
  void slowDown(double factor) {
    slowdown = factor;
  }

  double slowdown() {
    return slowdown;
  }

  /** Steps timed while another step was in flight (a broken scheduler's second chain); 0. */
  long overlappingSteps() {
    return overlappingSteps;
  }

  /** Engine steps run so far. */
  long steps() {
    return steps;
  }

  private void kick() {
    if (!stepping && !stepInFlight) {
      runSteps();
    }
  }

  private void runSteps() {
    stepping = true;
    try {
      while (true) {
        List<Sequence> batch = plan();
        if (batch.isEmpty()) {
          return;
        }
        double ms = cost(batch);
        owedMs += ms;
        long wait = (long) owedMs;
        if (wait >= 1) {
          owedMs -= wait;
          if (stepInFlight) {
            overlappingSteps++;
          }
          stepInFlight = true;
          inFlightMs = ms;
          vertx.setTimer(wait, t -> {
            stepInFlight = false;
            // a sequence that ends, resumes or arrives while the step completes must not start a second chain of
            // steps beside this one (each kick() from inside complete() did: the engine ran faster the more requests
            // ended, 800 ms of simulated steps in 279 ms)
            stepping = true;
            try {
              complete(batch, ms);
            } finally {
              stepping = false;
            }
            runSteps();
          });
          return;
        }
        complete(batch, ms);
      }
    } finally {
      stepping = false;
    }
  }

  /** The sequences of the next step: running ones first, then waiting ones admitted in order, within the budget. */
  private List<Sequence> plan() {
    List<Sequence> batch = new ArrayList<>();
    int budget = options.getMaxNumBatchedTokens();
    for (Sequence seq : running) {
      if (budget <= 0) {
        break;
      }
      if (seq.schedulable()) {
        budget -= schedule(seq, budget);
        batch.add(seq);
      }
    }
    while (budget > 0 && !waiting.isEmpty() && running.size() < options.getMaxNumSeqs()) {
      Sequence seq = waiting.poll();
      running.add(seq);
      seq.listener.admitted();
      if (seq.released) {
        continue;
      }
      if (seq.schedulable()) {
        budget -= schedule(seq, budget);
        batch.add(seq);
      }
    }
    return batch;
  }

  /** Books this step's work for the sequence and tells its owner which prompt chunk it computes; returns the budget used. */
  private static int schedule(Sequence seq, int budget) {
    int used = take(seq, budget);
    if (!seq.prefilled && seq.chunk > 0) {
      seq.listener.chunkScheduled(seq.chunk);
    }
    return used;
  }

  /** Books this step's work for the sequence; returns the budget it uses. */
  private static int take(Sequence seq, int budget) {
    if (seq.prefilled) {
      seq.chunk = 0;
      return 1;
    }
    seq.chunk = Math.min(seq.prefillLeft, budget);
    return Math.max(1, seq.chunk);
  }

  private double cost(List<Sequence> batch) {
    int prefillTokens = 0;
    int prefillsStarted = 0;
    for (Sequence seq : batch) {
      prefillTokens += seq.chunk;
      if (!seq.started) {
        prefillsStarted++;
      }
    }
    return slowdown * (options.getItlMs() + options.getItlPerRunningMs() * batch.size()
      + options.getTtftPerPromptTokenMs() * prefillTokens + options.getTtftBaseMs() * prefillsStarted);
  }

  private void complete(List<Sequence> batch, double ms) {
    simulatedMs += ms;
    steps++;
    for (Sequence seq : batch) {
      if (seq.released) {
        continue;
      }
      seq.started = true;
      if (!seq.prefilled) {
        seq.prefillLeft -= seq.chunk;
        seq.prefillSteps++;
        if (seq.prefillLeft > 0) {
          continue;
        }
        seq.prefilled = true;
        seq.firstTokenMs = simulatedMs;
        seq.listener.prefilled();
      } else {
        seq.lastTokenMs = simulatedMs;
      }
      if (!seq.released && seq.tokensLeft > 0) {
        seq.tokensLeft--;
        seq.listener.token();
      }
    }
  }

  /** Sequences in the running batch now (including paused and finished-but-unreleased ones). */
  int running() {
    return running.size();
  }

  /** Sequences waiting for a place in the batch. */
  int waiting() {
    return waiting.size();
  }
}
