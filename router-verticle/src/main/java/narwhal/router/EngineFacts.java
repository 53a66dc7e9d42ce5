package narwhal.router;

import java.util.Collection;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What engines attested about themselves (preflight fills it): the KV lease, which bounds handoff age, and
 * the KV side channel, which a descriptor must name. Unknown facts fall back to configuration. Beside them, each
 * engine's context ({@code max_model_len} from {@code /v1/models} or {@code /tokenize}) and how many tokens its
 * tokenizer adds to a one-character prompt, which bound a prompt's tokens by its bytes ({@link ContextFit}); a model's
 * context is the smallest among its own engines.
 */
public final class EngineFacts {
  /** One engine's attested facts; null fields are unknown. */
  public record Facts(Double kvLeaseS, String sideChannel, String connector) {
  }

  /**
   * One engine's context: {@code max_model_len}, where it was read ({@link #FROM_MODELS} or {@link #FROM_TOKENIZE}),
   * and the token count of the prompt {@code "x"} (null: unknown).
   */
  public record Context(int maxModelLen, Integer oneCharTokens, String from) {
  }

  /** Read from the engine's {@code /v1/models} (preflight, reload, readmission). */
  public static final String FROM_MODELS = "models";
  /** Read from a {@code /tokenize} answer of a context check: it stands until the engine's models are read again. */
  public static final String FROM_TOKENIZE = "tokenize";

  private final Map<String, Facts> byIid = new ConcurrentHashMap<>();
  private final Map<String, Context> contexts = new ConcurrentHashMap<>();
  private final Map<String, String> reasoningFields = new ConcurrentHashMap<>();

  /**
   * Records the field engine {@code iid}'s stream named its reasoning with ({@code reasoning_content}, older vLLM, or
   * {@code reasoning}): a non-streamed answer without reasoning spells that field out as null, as the engine's does.
   */
  public void reasoningField(String iid, String field) {
    if (field != null && !field.equals(reasoningFields.get(iid))) reasoningFields.put(iid, field);
  }

  /** The reasoning field engine {@code iid} was last seen to use; null until its stream carried reasoning. */
  public String reasoningField(String iid) {
    return reasoningFields.get(iid);
  }

  /** Records an engine's {@code max_model_len} as its {@code /v1/models} lists it, keeping what is known of its tokenizer. */
  public void maxModelLen(String iid, int maxModelLen) {
    maxModelLen(iid, maxModelLen, FROM_MODELS);
  }

  /** Records an engine's {@code max_model_len} read from {@code from}, keeping what is known of its tokenizer. */
  public void maxModelLen(String iid, int maxModelLen, String from) {
    contexts.merge(iid, new Context(maxModelLen, null, from), (old, now) -> new Context(maxModelLen, old.oneCharTokens(), from));
  }

  /** Records how many tokens the engine makes of the prompt {@code "x"} (its added special tokens included). */
  public void oneCharTokens(String iid, int tokens) {
    contexts.computeIfPresent(iid, (k, old) -> new Context(old.maxModelLen(), tokens, old.from()));
  }

  public Context context(String iid) {
    return contexts.get(iid);
  }

  /**
   * The smallest {@code max_model_len} the engines {@code iids} reported (the engines of one model: a decode of it may
   * land on any of them). Null when none did.
   */
  public Integer smallestContext(Collection<String> iids) {
    return iids.stream().map(contexts::get).filter(Objects::nonNull).map(Context::maxModelLen).min(Integer::compare)
        .orElse(null);
  }

  public void put(String iid, Facts facts) {
    byIid.put(iid, facts);
  }

  /** Records what an engine attested. */
  public void learn(String iid, narwhal.engines.checks.EngineAttestation attested) {
    put(iid, new Facts(attested.kvLeaseS(), attested.sideChannel(), attested.connector()));
  }

  /** Forgets an engine's facts (it was re-pointed or removed): until learned again, configuration stands. */
  public void forget(String iid) {
    byIid.remove(iid);
    contexts.remove(iid);
    reasoningFields.remove(iid);
  }

  public Facts get(String iid) {
    return byIid.getOrDefault(iid, new Facts(null, null, null));
  }

  /** Handoff age bound in ms: {@code L − floor(L/6)} seconds; 0 means no bound (docs/vllm.md#the-fleet-file-for-them). */
  public long handoffBoundMs(String producerIid, double configuredLeaseS) {
    Double attested = get(producerIid).kvLeaseS();
    double lease = attested != null ? attested : configuredLeaseS;
    if (lease <= 0) return 0;
    double bound = lease - Math.floor(lease / 6);
    return (long) (bound * 1000);
  }
}
