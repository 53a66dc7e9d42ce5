package narwhal.router;

/**
 * The shared retry-credit pool (docs/errors.md): starts full at {@code serving.retry_budget}; a retry spends one
 * credit when its prefill dispatches; each completed request adds {@code serving.retry_replenish}, capped at
 * the pool size. Credits are counted in millionths, so refills add up exactly (ten refills of 0.1 are one
 * whole credit, not 0.9999999999999999). One pool per replica, shared by its event loops: thread-safe.
 */
final class RetryBudget {
  private static final long UNIT = 1_000_000L;

  private long size;
  private long replenish;
  private long credits;

  public RetryBudget(double size, double replenish) {
    this.size = units(size);
    this.replenish = units(replenish);
    this.credits = this.size;
  }

  public synchronized boolean available() {
    return credits >= UNIT;
  }

  public synchronized boolean trySpend() {
    if (!available()) return false;
    credits -= UNIT;
    return true;
  }

  public synchronized void completed() {
    credits = Math.min(size, credits + replenish);
  }

  public synchronized double credits() {
    return credits / (double) UNIT;
  }

  /** Applies reloaded settings; credits above the new size are cut to it. */
  public synchronized void resize(double newSize, double newReplenish) {
    size = units(newSize);
    replenish = units(newReplenish);
    credits = Math.min(credits, size);
  }

  private static long units(double credits) {
    return Math.max(0, Math.round(credits * UNIT));
  }
}
