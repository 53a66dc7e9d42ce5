package narwhal.bench.load;

import io.vertx.core.Future;

/** One request of a load phase, started on a Vert.x event loop; never fails, a failure is an {@link Exchange} outcome. */
@FunctionalInterface
public interface Work {
  Future<Exchange> start();
}
