package narwhal.tools;

import narwhal.bench.Bench;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tools jar's help: {@code bench --help} lists every scenario, and the root names where serve, preflight and admin are. */
class ToolsHelpTest {
  private static String help(String... args) {
    StringWriter out = new StringWriter();
    int exit = ToolsCommand.commandLine().setOut(new PrintWriter(out, true)).execute(args);
    assertEquals(0, exit, out.toString());
    return out.toString();
  }

  @Test
  void benchHelpListsEveryScenario() {
    String help = help("bench", "--help");
    for (String scenario : Bench.scenarios().keySet()) {
      assertTrue(help.lines().anyMatch(line -> line.startsWith("  " + scenario + " ")), scenario + " missing from:\n" + help);
    }
    assertTrue(help.contains("rolling-restart"), help);
  }

  @Test
  void theRootHelpNamesTheProductionJarsCommands() {
    String help = help("--help");
    for (String command : new String[] {"demo", "sim", "bench", "serve", "preflight", "admin", "narwhal.jar"}) {
      assertTrue(help.contains(command), command + " missing from:\n" + help);
    }
  }
}
