package narwhal.launcher;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code --version} prints the version Maven built, not a hard-coded one. */
class VersionTest {
  @Test
  void versionComesFromTheBuild() {
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(new NarwhalCommand());
    cli.setOut(new PrintWriter(out));
    assertEquals(0, cli.execute("--version"));
    String expected = System.getProperty("narwhal.project.version");
    assertTrue(expected != null && !expected.isBlank(), "surefire passes the pom's version");
    assertEquals("narwhal " + expected, out.toString().strip());
  }
}
