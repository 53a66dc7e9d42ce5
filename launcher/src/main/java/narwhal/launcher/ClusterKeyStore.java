package narwhal.launcher;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;

/**
 * Checks the PKCS12 store {@code cluster.tls.key_store} before the event bus uses it as both key and trust store
 * (docs/operations.md#threat-model): it must open with its password, hold this replica's private key, and trust no
 * certificate of a public certificate authority (a store that did would let any holder of a certificate that authority
 * issued, which anyone can get, join the bus). Each refusal names the key.
 */
final class ClusterKeyStore {
  private static final String KEY = "cluster.tls.key_store";

  private ClusterKeyStore() {
  }

  /** Throws an {@link IllegalArgumentException} naming {@value #KEY} when the store is not fit for the cluster. */
  static void check(Path path, String password) {
    KeyStore store;
    try (InputStream in = Files.newInputStream(path)) {
      store = KeyStore.getInstance("PKCS12");
      store.load(in, password.toCharArray());
    } catch (Exception e) {
      throw new IllegalArgumentException(KEY + ": cannot open " + path + " as a PKCS12 store with the password of "
          + "cluster.tls.key_store_password_env (" + e.getMessage() + ")");
    }
    try {
      boolean key = false;
      Set<Certificate> publicRoots = publicRoots();
      for (String alias : Collections.list(store.aliases())) {
        key |= store.isKeyEntry(alias);
        Certificate[] chain = store.isKeyEntry(alias) ? store.getCertificateChain(alias) : new Certificate[] {store.getCertificate(alias)};
        for (Certificate c : chain == null ? new Certificate[0] : chain) {
          if (c != null && publicRoots.contains(c)) {
            throw new IllegalArgumentException(KEY + ": " + path + " trusts the public certificate authority \""
                + ((X509Certificate) c).getSubjectX500Principal().getName() + "\" (alias " + alias + "): every certificate it issues "
                + "would reach the event bus; expected a store holding only the cluster's own certificate or private authority");
          }
        }
      }
      if (!key) {
        throw new IllegalArgumentException(KEY + ": " + path + " holds no private key: expected this replica's key and certificate");
      }
    } catch (java.security.KeyStoreException e) {
      throw new IllegalArgumentException(KEY + ": cannot read " + path + ": " + e.getMessage());
    }
  }

  /** The JDK's default trusted certificate authorities ({@code lib/security/cacerts}); none when it cannot be read. */
  private static Set<Certificate> publicRoots() {
    Set<Certificate> roots = new HashSet<>();
    Path cacerts = Path.of(System.getProperty("java.home"), "lib", "security", "cacerts");
    try (InputStream in = Files.newInputStream(cacerts)) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(in, null);
      for (String alias : Collections.list(store.aliases())) {
        Certificate c = store.getCertificate(alias);
        if (c != null) roots.add(c);
      }
    } catch (Exception unreadable) {
      // no JDK roots to compare with: nothing is refused for it
    }
    return roots;
  }
}
