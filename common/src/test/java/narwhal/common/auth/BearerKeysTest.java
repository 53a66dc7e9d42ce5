package narwhal.common.auth;

import narwhal.common.config.ConfigException;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BearerKeysTest {

  @Test
  void commaSeparatedKeysAreTrimmedAndEmptyOnesDropped() {
    assertEquals(List.of("a", "b c", "d"), BearerKeys.split(" a ,b c,, d ,"));
    assertEquals(List.of(), BearerKeys.split(null));
  }

  @Test
  void admitsOnlyBearerWithOneOfTheKeys() {
    BearerKeys keys = BearerKeys.from(variable("server.api_key_env", "KEYS"), Map.of("KEYS", "k1,k2")::get);
    assertTrue(keys.admits("Bearer k1"));
    assertTrue(keys.admits("bearer k2"));
    assertFalse(keys.admits("Bearer k3"));
    assertFalse(keys.admits("Bearer k1,k2"));
    assertFalse(keys.admits("Bearer "));
    assertFalse(keys.admits("k1"));
    assertFalse(keys.admits("Basic k1"));
    assertFalse(keys.admits(null));
  }

  @Test
  void noVariableNamedIsOpenButANamedVariableThatIsUnsetIsRefused() {
    assertTrue(BearerKeys.from(variable("server.api_key_env", ""), name -> null).admits(null));
    ConfigException unset = assertThrows(ConfigException.class,
        () -> BearerKeys.from(variable("server.api_key_env", "KEYS"), name -> null));
    assertEquals("server.api_key_env", unset.key());
    assertEquals("server.api_key_env: the environment variable KEYS is not set or holds no key: expected one or more "
        + "comma-separated keys", unset.getMessage());
    assertThrows(ConfigException.class, () -> BearerKeys.from(variable("server.ops_token_env", "T"), name -> " , "));
  }

  @Test
  void sameComparesSecretsAndNeverMatchesNull() {
    assertTrue(BearerKeys.same("t0ken", "t0ken"));
    assertFalse(BearerKeys.same("t0ken", "t0ke"));
    assertFalse(BearerKeys.same(null, null));
    assertFalse(BearerKeys.same("t0ken", null));
  }

  private static narwhal.common.config.SecretRef variable(String key, String name) {
    return new narwhal.common.config.SecretRef(key.replace("_env", "_file"), "", key, name);
  }
}
