package narwhal.router;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Admission}: the in-flight limit, and the stop sequence counting requests (not reservations). */
class AdmissionTest {
  @Test
  void admitsUpToTheLimitAndCountsEachRequestUntilItEnds() {
    Admission admission = new Admission();
    assertEquals(Admission.Verdict.ADMITTED, admission.admit(2));
    assertEquals(Admission.Verdict.ADMITTED, admission.admit(2));
    assertEquals(Admission.Verdict.OVERLOADED, admission.admit(2));
    assertEquals(2, admission.inFlight());
    admission.finished();
    assertEquals(Admission.Verdict.ADMITTED, admission.admit(2));
  }

  @Test
  void drainingStillAdmitsClosedRefusesAndIdleWaitsForTheLastRequest() {
    Admission admission = new Admission();
    admission.admit(10);
    admission.drain();
    assertTrue(admission.draining());
    assertEquals(Admission.Verdict.ADMITTED, admission.admit(10), "a draining replica still serves");
    assertEquals(2, admission.close());
    assertEquals(Admission.Verdict.SHUTTING_DOWN, admission.admit(10));
    assertEquals(2, admission.inFlight(), "a refusal counts nothing in");
    admission.finished();
    assertFalse(admission.idle().isComplete(), "one request is still in flight (between its legs it holds no reservation)");
    admission.finished();
    assertTrue(admission.idle().isComplete());
  }

  @Test
  void closingAnIdleReplicaIsIdleAtOnce() {
    Admission admission = new Admission();
    assertEquals(0, admission.close());
    assertTrue(admission.idle().isComplete());
    assertTrue(admission.draining(), "closed implies unready");
  }
}
