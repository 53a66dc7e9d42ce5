package narwhal.tools;

import narwhal.launcher.BuildVersion;
import narwhal.launcher.NarwhalCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code narwhal} command line of the tools jar, {@code narwhal-tools.jar}: the demo, the simulator and the
 * benchmarks, kept out of the production jar ({@code narwhal.jar}, {@link NarwhalCommand}) that replicas run.
 */
@Command(name = "narwhal", mixinStandardHelpOptions = true, versionProvider = BuildVersion.class,
    description = "Narwhal's tools: the demo, simulated vLLM engines and the benchmarks.",
    subcommands = {DemoCommand.class, SimCommand.class, BenchCommand.class, CommandLine.HelpCommand.class},
    footer = {"", "In the production jar (launcher/target/narwhal.jar; ./narwhal runs it for these):",
        "  serve      Run a router replica for the fleet in --fleet.",
        "  preflight  Check every engine and every producer→consumer pair.",
        "  admin      Send one admin command to the router cluster and print the reply."})
public final class ToolsCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  public static void main(String[] args) {
    NarwhalCommand.prepareJvm();
    System.exit(commandLine().execute(args));
  }

  /** The tools' command line, with the launcher's failure handling and the bench help listing every scenario. */
  static CommandLine commandLine() {
    CommandLine cli = NarwhalCommand.commandLine(new ToolsCommand());
    BenchCommand.listScenarios(cli.getSubcommands().get("bench"));
    return cli;
  }
}
