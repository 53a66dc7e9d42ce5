package narwhal.launcher;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code narwhal} command line of the production jar, {@code narwhal.jar}: what a replica runs (serve, preflight,
 * admin). The demo, the simulator and the benchmarks are in the tools jar ({@code narwhal.tools.ToolsCommand}).
 */
@Command(name = "narwhal", mixinStandardHelpOptions = true, versionProvider = BuildVersion.class,
    description = "A router for disaggregated LLM inference (prefill on one vLLM engine, decode on another).",
    subcommands = {ServeCommand.class, PreflightCommand.class, AdminCli.class, CommandLine.HelpCommand.class},
    footer = {"", "In the tools jar (tools/target/narwhal-tools.jar; ./narwhal runs it for these):",
        "  demo   Run the router with an embedded simulated fleet.",
        "  sim    Run simulated vLLM engines.",
        "  bench  Run a benchmark scenario against simulated engines."})
public final class NarwhalCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  public static void main(String[] args) {
    prepareJvm();
    System.exit(commandLine(new NarwhalCommand()).execute(args));
  }

  /** What every entry point that may start a replica runs first ({@link AsyncPool}). */
  public static void prepareJvm() {
    AsyncPool.atLeastTwoThreads();
  }

  /** The command line of {@code command}: a {@link CommandFailure} prints "narwhal: message" and exits 2. */
  public static CommandLine commandLine(Object command) {
    CommandLine cli = new CommandLine(command);
    cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
      if (!(ex instanceof CommandFailure)) throw ex;
      commandLine.getErr().println("narwhal: " + ex.getMessage());
      return 2;
    });
    CommandLine admin = cli.getSubcommands().get("admin");
    if (admin != null) {
      // picocli asks the handler of the command line that executes, the root (setting it sets every subcommand's)
      CommandLine.IParameterExceptionHandler rootHandler = cli.getParameterExceptionHandler();
      CommandLine.IParameterExceptionHandler adminHandler = AdminCli.badArgumentsExitOne(admin).getParameterExceptionHandler();
      cli.setParameterExceptionHandler((ex, args) -> (ex.getCommandLine() == admin ? adminHandler : rootHandler)
          .handleParseException(ex, args));
    }
    return cli;
  }
}
