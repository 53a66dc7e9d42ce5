package narwhal.launcher;

import com.hazelcast.cluster.Member;
import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.core.HazelcastInstance;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The departure of the admin command's lite member, logged as what it is. Hazelcast 5 announces no member's departure,
 * graceful or not (a replica stopped by SIGTERM leaves the same lines): the members find out by failing to reconnect,
 * and log it as a warning — the first to give up {@value #REMOVING_TEXT} (its connection error handler), the others,
 * when their own reconnects fail first, {@value #SUSPECTED_TEXT}; and a second admin call that binds the address of
 * the first before the cluster dropped it is logged as {@value #REJOIN_TEXT}. Every {@code narwhal admin} call joins
 * as a lite member and shuts it down gracefully after the reply, so every call would leave such warnings in every
 * replica's log. On a replica, these lines about a lite member of its cluster (replicas are full members; lite members
 * are admin commands) are written at INFO, prefixed with what happened; the same lines about a replica stay warnings.
 * {@code AdminViewsTest} checks a replica's log after admin calls against the Hazelcast version the build ships.
 */
final class LiteMemberLeaves implements Filter {
  static final String REMOVING_TEXT = "Removing connection to endpoint [HOST]:PORT Cause =>";
  static final String SUSPECTED_TEXT = "Member [HOST]:PORT - UUID lite is suspected to be dead";
  static final String REJOIN_TEXT = "New join request has been received from an existing endpoint Member [HOST]:PORT - UUID lite.";
  /** How long after a lite member left a late warning about it is still recognised. */
  private static final long REMEMBER_MS = TimeUnit.MINUTES.toMillis(1);
  private static final Pattern REMOVING = pattern(REMOVING_TEXT);
  private static final Pattern SUSPECTED = pattern(SUSPECTED_TEXT);
  private static final Pattern REJOIN = pattern(REJOIN_TEXT);
  /** The loggers of those lines, held so that JUL keeps them, and this filter on them, for as long as the process runs. */
  private static final List<Logger> LOGGERS = List.of(
      Logger.getLogger("com.hazelcast.internal.server.tcp.TcpServerConnectionErrorHandler"),
      Logger.getLogger("com.hazelcast.internal.cluster.impl.MembershipManager"),
      Logger.getLogger("com.hazelcast.internal.cluster.impl.ClusterJoinManager"));
  private static final LiteMemberLeaves FILTER = new LiteMemberLeaves();

  /** Lite members seen → when they left (0 while they are members). */
  private final Map<Lite, Long> liteMembers = new ConcurrentHashMap<>();

  private record Lite(String cluster, String address) {
  }

  private LiteMemberLeaves() {
  }

  /** Recognises, from now on, the lite members of {@code hazelcast}'s cluster (one per replica: every replica of this JVM shares the filter). */
  static void watch(String clusterName, HazelcastInstance hazelcast) {
    LOGGERS.forEach(logger -> {
      if (logger.getFilter() != FILTER) logger.setFilter(FILTER);
    });
    hazelcast.getCluster().addMembershipListener(new MembershipListener() {
      @Override
      public void memberAdded(MembershipEvent event) {
        if (event.getMember().isLiteMember()) FILTER.liteMembers.put(key(clusterName, event.getMember()), 0L);
      }

      @Override
      public void memberRemoved(MembershipEvent event) {
        if (event.getMember().isLiteMember()) FILTER.liteMembers.put(key(clusterName, event.getMember()), System.currentTimeMillis());
      }
    });
    hazelcast.getCluster().getMembers().stream().filter(Member::isLiteMember)
        .forEach(member -> FILTER.liteMembers.put(key(clusterName, member), 0L));
  }

  private static Lite key(String clusterName, Member member) {
    return new Lite(clusterName, member.getAddress().getHost() + ":" + member.getAddress().getPort());
  }

  @Override
  public boolean isLoggable(LogRecord record) {
    if (record.getLevel().intValue() < Level.WARNING.intValue() || record.getMessage() == null) return true;
    String message = record.getMessage();
    String address = lite(message);
    if (address == null) return true;
    LogRecord info = new LogRecord(Level.INFO, "the lite member " + address + " (a narwhal admin command) left; Hazelcast: " + message);
    info.setLoggerName(record.getLoggerName());
    info.setSourceClassName(record.getSourceClassName());
    info.setSourceMethodName(record.getSourceMethodName());
    Logger.getLogger(record.getLoggerName()).log(info);
    return false;
  }

  /** The address of the lite member the line is about, or null for any other line. */
  private String lite(String message) {
    for (Pattern p : List.of(SUSPECTED, REJOIN)) {
      Matcher m = p.matcher(message);
      if (m.find()) return m.group(1) + ":" + m.group(2);
    }
    Matcher m = REMOVING.matcher(message);
    if (!m.find()) return null;
    String address = m.group(1) + ":" + m.group(2);
    long now = System.currentTimeMillis();
    liteMembers.values().removeIf(left -> left > 0 && now - left > REMEMBER_MS);
    return liteMembers.keySet().stream().anyMatch(k -> k.address().equals(address) && message.contains("[" + k.cluster() + "]"))
        ? address : null;
  }

  /** A line's text, matched literally but for {@code HOST}, {@code PORT} (captured) and {@code UUID}. */
  private static Pattern pattern(String text) {
    return Pattern.compile(Pattern.quote(text).replace("HOST", "\\E([^\\]]+)\\Q").replace("PORT", "\\E(\\d+)\\Q")
        .replace("UUID", "\\E\\S+\\Q"));
  }
}
