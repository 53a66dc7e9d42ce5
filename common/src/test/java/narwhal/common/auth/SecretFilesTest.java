package narwhal.common.auth;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The secret source: files by {@code file:<path>}, variables otherwise; a refresh sees a change, an unreadable file keeps its text. */
class SecretFilesTest {
  @Test
  void filesAreReadStrippedAndRereadOnlyByRefresh() throws Exception {
    Path file = Files.createTempFile("narwhal-secret", ".txt");
    Files.writeString(file, "  k1,k2\n");
    SecretFiles secrets = new SecretFiles(Map.of("VAR", "v")::get);
    assertEquals("v", secrets.apply("VAR"));
    assertNull(secrets.apply("UNSET"));
    assertEquals("k1,k2", secrets.apply("file:" + file));
    Files.writeString(file, "k3\n");
    assertEquals("k1,k2", secrets.apply("file:" + file), "read again only by a refresh, never on the request path");
    assertTrue(secrets.refresh());
    assertEquals("k3", secrets.apply("file:" + file));
    assertFalse(secrets.refresh(), "nothing changed");

    Files.delete(file);
    assertFalse(secrets.refresh());
    assertEquals("k3", secrets.apply("file:" + file), "a file that turns unreadable keeps its last text (a swap in progress)");
    Files.writeString(file, "k4");
    assertTrue(secrets.refresh());
    assertEquals("k4", secrets.apply("file:" + file));
    assertNull(secrets.apply("file:" + file + ".missing"), "a file never read answers as an unset variable");
  }
}
