package narwhal.router;

import narwhal.common.config.EngineConfig;
import narwhal.common.config.NarwhalConfig;

import java.util.List;

/**
 * The base model each engine serves ({@code engines[].model}, or the fleet's {@code model}): what a request naming an
 * adapter or an alias is really served by, and what an engine's "model does not exist" answer is evidence about.
 */
final class BaseModels {
  private BaseModels() {
  }

  /** The base model of engine {@code iid}; null when the fleet has no such engine. */
  static String of(NarwhalConfig cfg, String iid) {
    return cfg.engines().stream().filter(e -> e.iid().equals(iid)).map(EngineConfig::model).findFirst().orElse(null);
  }

  /** The engines serving the same base model as engine {@code iid}, it included. */
  static List<String> enginesLike(NarwhalConfig cfg, String iid) {
    return enginesOf(cfg, of(cfg, iid));
  }

  /** The engines whose base model is {@code model}. */
  static List<String> enginesOf(NarwhalConfig cfg, String model) {
    return cfg.engines().stream().filter(e -> e.model().equals(model)).map(EngineConfig::iid).toList();
  }
}
