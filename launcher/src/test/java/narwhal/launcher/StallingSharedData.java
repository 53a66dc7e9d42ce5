package narwhal.launcher;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.shareddata.AsyncMap;
import io.vertx.core.shareddata.Counter;
import io.vertx.core.shareddata.SharedData;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A replica's real Hazelcast-backed {@link SharedData}, passed through unchanged until {@link #stall()}: from then on
 * every operation (getting a map, counter or lock, and every call on the maps and counters already handed out) returns a
 * future that never completes, as a member whose cluster stopped answering sees it, until {@link #resume()}.
 */
final class StallingSharedData {
  private final AtomicBoolean stalled = new AtomicBoolean();
  private final AtomicInteger stalledCalls = new AtomicInteger();

  SharedData wrap(SharedData real) {
    return proxy(SharedData.class, real);
  }

  void stall() {
    stalled.set(true);
  }

  void resume() {
    stalled.set(false);
  }

  /** How many operations were left hanging while stalled. */
  int stalledCalls() {
    return stalledCalls.get();
  }

  @SuppressWarnings("unchecked")
  private <T> T proxy(Class<T> type, T real) {
    InvocationHandler handler = (self, method, args) -> {
      if (method.getDeclaringClass() == Object.class) return invoke(method, real, args);
      if (Future.class.isAssignableFrom(method.getReturnType()) && stalled.get()) {
        stalledCalls.incrementAndGet();
        return Promise.promise().future();
      }
      Object result = invoke(method, real, args);
      if (result instanceof Future<?> future) return future.map(this::wrapped);
      return result;
    };
    return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler);
  }

  @SuppressWarnings("unchecked")
  private Object wrapped(Object value) {
    if (value instanceof AsyncMap<?, ?> map) return proxy(AsyncMap.class, (AsyncMap<Object, Object>) map);
    if (value instanceof Counter counter) return proxy(Counter.class, counter);
    return value;
  }

  private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
