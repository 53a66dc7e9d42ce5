package narwhal.sim;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A clock tests move by hand, to drive KV lease expiry and timed faults without waiting. */
final class MutableClock extends Clock {

  private volatile Instant now;

  MutableClock(Instant start) {
    this.now = start;
  }

  MutableClock() {
    this(Instant.parse("2026-01-01T00:00:00Z"));
  }

  void advance(Duration by) {
    now = now.plus(by);
  }

  @Override
  public Instant instant() {
    return now;
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }
}
