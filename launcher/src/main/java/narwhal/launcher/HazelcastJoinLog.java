package narwhal.launcher;

import java.util.function.BiConsumer;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one place Narwhal reads Hazelcast's log. Hazelcast 5 has no API signal for a join refused over the cluster name:
 * no membership, lifecycle or migration event fires, the refusal is only logged, on both sides. The joiner receives a
 * {@code ClusterMismatchOp} and logs {@value #REFUSED_TEXT}; the member it knocked at logs {@value #STRANGER_TEXT}.
 * This class matches those two lines of one cluster name and nothing else; {@code HazelcastJoinLogTest} pins both
 * against the Hazelcast version the build ships, so a rewording in an upgrade fails the build rather than a replica.
 */
final class HazelcastJoinLog extends Handler {
  /** What the refused joiner logs (the address is the member that refused it). */
  static final String REFUSED_TEXT = "Node could not join cluster at node: [HOST]:PORT Cause: the target cluster has a different cluster-name";
  /** What a member logs when a replica of another cluster name tries to join it. */
  static final String STRANGER_TEXT = "Received an invalid join request from [HOST]:PORT, cause: members part of different cluster";
  private static final Pattern REFUSED = pattern(REFUSED_TEXT);
  private static final Pattern STRANGER = pattern(STRANGER_TEXT);

  /** Hazelcast's logger, held so that JUL keeps it (and this handler on it) for as long as this replica runs. */
  private final Logger hazelcast = Logger.getLogger("com.hazelcast");
  private final String clusterName;
  private final BiConsumer<Kind, String> seen;

  /** Which of the two lines a record was. */
  enum Kind { REFUSED, STRANGER }

  private HazelcastJoinLog(String clusterName, BiConsumer<Kind, String> seen) {
    this.clusterName = clusterName;
    this.seen = seen;
  }

  /**
   * Starts reading the join refusals Hazelcast logs for {@code clusterName} (the prefix of every line of that member);
   * {@code seen} gets each one with the other side's {@code host:port}.
   */
  static HazelcastJoinLog listen(String clusterName, BiConsumer<Kind, String> seen) {
    HazelcastJoinLog log = new HazelcastJoinLog(clusterName, seen);
    log.hazelcast.addHandler(log);
    return log;
  }

  @Override
  public void publish(LogRecord record) {
    String message = record.getMessage();
    if (message == null || !message.contains("[" + clusterName + "]")) return;
    Matcher refused = REFUSED.matcher(message);
    if (refused.find()) {
      seen.accept(Kind.REFUSED, refused.group(1) + ":" + refused.group(2));
      return;
    }
    Matcher stranger = STRANGER.matcher(message);
    if (stranger.find()) seen.accept(Kind.STRANGER, stranger.group(1) + ":" + stranger.group(2));
  }

  /** A line's text, matched literally but for {@code HOST} and {@code PORT}, which are captured. */
  private static Pattern pattern(String text) {
    return Pattern.compile(Pattern.quote(text).replace("HOST", "\\E([^\\]]+)\\Q").replace("PORT", "\\E(\\d+)\\Q"));
  }

  @Override
  public void flush() {
  }

  @Override
  public void close() {
    hazelcast.removeHandler(this);
  }
}
