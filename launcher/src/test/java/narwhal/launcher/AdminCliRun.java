package narwhal.launcher;

import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.function.UnaryOperator;

/** One {@code narwhal admin ARGS --fleet FLEET} run in this JVM, as an operator runs it: its exit code and output. */
record AdminCliRun(int exit, String out, String err) {

  static AdminCliRun of(Path fleet, UnaryOperator<String> env, String... args) {
    AdminCli command = new AdminCli();
    command.env = env;
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = AdminCli.badArgumentsExitOne(new CommandLine(command)).setOut(new PrintWriter(out, true))
        .setErr(new PrintWriter(err, true));
    String[] all = new String[args.length + 2];
    System.arraycopy(args, 0, all, 0, args.length);
    all[args.length] = "--fleet";
    all[args.length + 1] = fleet.toString();
    int exit = cli.execute(all);
    return new AdminCliRun(exit, out.toString(), err.toString());
  }
}
