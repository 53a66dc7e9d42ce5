package narwhal.router;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The check that a client-facing text names no engine port finds a port, not its digits inside an id. */
class FailureChecksTest {
  @Test
  void aPortIsFoundAsANumberOfItsOwnNotInsideAnIdOrATimestamp() {
    assertTrue(FailureChecks.names("upstream http://127.0.0.1:43904/v1/completions failed", 43904));
    assertTrue(FailureChecks.names("{\"port\":43904}", 43904));
    assertFalse(FailureChecks.names("{\"id\":\"cmpl-43904541-f317-4746\",\"created\":1796576181}", 43904),
        "CI's false alarm: the port's digits inside a completion id");
    assertFalse(FailureChecks.names("{\"created\":1743904}", 43904));
  }
}
