package narwhal.launcher;

/** A command that cannot go on, with the one line to tell the operator why. */
public final class CommandFailure extends RuntimeException {
  public CommandFailure(String message) {
    super(message, null, false, false);
  }
}
