package narwhal.common.config;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.regex.Pattern;

/** Syntax checks for the addresses a fleet file names: engine URLs and {@code host[:port]} pairs. */
final class AddressSyntax {

  private static final Pattern HOST_NAME = Pattern.compile("[A-Za-z0-9._-]+");
  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]+");
  private static final Pattern PORT = Pattern.compile("[0-9]{1,5}");

  private AddressSyntax() {
  }

  /** An {@code http://} or {@code https://} URL with a host, an optional port, no query or fragment. */
  static boolean isHttpUrl(String text) {
    URI uri;
    try {
      uri = new URI(text);
    } catch (URISyntaxException e) {
      return false;
    }
    return ("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))
        && uri.getHost() != null
        && !uri.getHost().isEmpty()
        && (uri.getPort() == -1 || isPort(uri.getPort()))
        && uri.getRawUserInfo() == null
        && uri.getRawQuery() == null
        && uri.getRawFragment() == null;
  }

  /** {@code host}, {@code host:port}, {@code [v6]} or {@code [v6]:port}; the port only when required. */
  static boolean isHostPort(String text, boolean portRequired) {
    String host;
    String port;
    if (text.startsWith("[")) {
      int end = text.indexOf(']');
      if (end < 0) {
        return false;
      }
      host = text.substring(1, end);
      String rest = text.substring(end + 1);
      if (!IPV6.matcher(host).matches() || !(rest.isEmpty() || rest.startsWith(":"))) {
        return false;
      }
      port = rest.isEmpty() ? null : rest.substring(1);
    } else {
      int colon = text.lastIndexOf(':');
      host = colon < 0 ? text : text.substring(0, colon);
      port = colon < 0 ? null : text.substring(colon + 1);
      if (!HOST_NAME.matcher(host).matches()) {
        return false;
      }
    }
    if (port == null) {
      return !portRequired;
    }
    return PORT.matcher(port).matches() && isPort(Integer.parseInt(port));
  }

  private static boolean isPort(int port) {
    return port >= 1 && port <= 65535;
  }
}
