package narwhal.common.bus;

import narwhal.common.fault.Phase;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** A reservation request crosses the bus as JSON (placement on another node): every field, {@code local} included. */
class ReserveRequestTest {
  @Test
  void roundTripsThroughJson() {
    ReserveRequest local = new ReserveRequest("r1", Phase.DECODE, List.of("B1"), null, "prefix:ab", "m", true);
    assertEquals(local, ReserveRequest.fromJson(local.toJson()));
    ReserveRequest plain = new ReserveRequest("r2", Phase.PREFILL, List.of(), "D0", null, null);
    assertEquals(plain, ReserveRequest.fromJson(plain.toJson()));
    assertFalse(ReserveRequest.fromJson(plain.toJson().copy().put("local", (Object) null)).local(), "absent: not local");
  }
}
