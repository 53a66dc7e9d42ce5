package narwhal.common.config;

import static narwhal.common.config.Fleets.withSection;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code cluster} section: defaults, overrides, the {@code --cluster} switch, and the {@code cluster.tls} keys. */
class ClusterConfigTest {

  private static ClusterConfig cluster(String sectionJson) {
    return NarwhalConfig.fromJson(withSection("cluster", sectionJson)).cluster();
  }

  private static void refused(String sectionJson, String key, String message) {
    ConfigException e = assertThrows(ConfigException.class,
        () -> NarwhalConfig.fromJson(withSection("cluster", sectionJson)));
    assertEquals(key, e.key());
    assertEquals(message, e.getMessage());
  }

  @Test
  void tlsIsOffByDefaultAndWrittenOut() {
    ClusterConfig c = cluster("{}");
    assertFalse(c.tls().enabled());
    assertEquals(new ClusterConfig.Tls(false, "", "NARWHAL_CLUSTER_TLS_PASSWORD"), c.tls());
    assertEquals(new JsonObject().put("enabled", false).put("key_store", "")
        .put("key_store_password_env", "NARWHAL_CLUSTER_TLS_PASSWORD"), c.toJson().getJsonObject("tls"));
  }

  @Test
  void everyKeyRoundTrips() {
    ClusterConfig c = cluster("""
        {"enabled": true, "name": "prod", "members": ["10.0.0.1:5701", "10.0.0.2"], "port": 5801,
         "host": "10.0.0.1",
         "tls": {"enabled": true, "key_store": "/etc/narwhal/cluster.p12", "key_store_password_env": "BUS_PW"}}
        """);
    assertEquals(new ClusterConfig(true, "prod", List.of("10.0.0.1:5701", "10.0.0.2"), 5801, "10.0.0.1",
        new ClusterConfig.Tls(true, "/etc/narwhal/cluster.p12", "BUS_PW")), c);
    NarwhalConfig whole = NarwhalConfig.fromJson(withSection("cluster", c.toJson().encode()));
    assertEquals(c, whole.cluster());
  }

  @Test
  void publicHostDiscoveryAndKubernetesKeysAreValidated() {
    ClusterConfig d = cluster("{}");
    assertEquals("", d.publicHost());
    assertEquals(ClusterConfig.Discovery.TCP_IP, d.discovery());
    assertEquals(new ClusterConfig.Kubernetes("", "", ""), d.kubernetes());
    refused("{\"public_host\": \"10.0.0.1:5701\"}", "cluster.public_host",
        "cluster.public_host: \"10.0.0.1:5701\" is not valid: expected \"\" or a host name or address without a port, "
            + "not a wildcard");
    refused("{\"public_host\": \"0.0.0.0\"}", "cluster.public_host",
        "cluster.public_host: \"0.0.0.0\" is not valid: expected \"\" or a host name or address without a port, "
            + "not a wildcard");
    refused("{\"discovery\": \"multicast\"}", "cluster.discovery",
        "cluster.discovery: \"multicast\" is not valid: expected one of \"tcp-ip\", \"kubernetes\"");
    refused("{\"discovery\": \"kubernetes\"}", "cluster.kubernetes.service_name",
        "cluster.kubernetes.service_name: missing: expected the name of the Kubernetes service of the router pods "
            + "(cluster.discovery is \"kubernetes\")");
    refused("{\"discovery\": \"kubernetes\", \"kubernetes\": {\"service_name\": \"Routers!\"}}",
        "cluster.kubernetes.service_name", "cluster.kubernetes.service_name: \"Routers!\" is not valid: expected the "
            + "name of the Kubernetes service of the router pods (cluster.discovery is \"kubernetes\")");
    refused("{\"kubernetes\": {\"namespace\": \"a_b\"}}", "cluster.kubernetes.namespace",
        "cluster.kubernetes.namespace: \"a_b\" is not valid: expected \"\" (the pod's own namespace) or a Kubernetes "
            + "namespace name");
    refused("{\"kubernetes\": {\"service\": \"x\"}}", "cluster.kubernetes.service", "cluster.kubernetes.service: unknown key");
    ClusterConfig k8s = cluster("{\"discovery\": \"kubernetes\", \"public_host\": \"routers-0.example\", "
        + "\"kubernetes\": {\"service_name\": \"routers\", \"namespace\": \"prod\"}}");
    assertEquals(k8s, NarwhalConfig.fromJson(withSection("cluster", k8s.toJson().encode())).cluster());
    assertEquals("routers-0.example", k8s.advertisedHost());
  }

  @Test
    void sharedStateGuardHasDefaultsAndRoundTrips() {
    assertEquals(new ClusterConfig.StateGuard(0.5, 3, 2), cluster("{}").sharedState());
    ClusterConfig c = cluster("{\"shared_state\": {\"operation_timeout_s\": 0.25, \"failure_threshold\": 5, \"reset_timeout_s\": 10}}");
    assertEquals(new ClusterConfig.StateGuard(0.25, 5, 10), c.sharedState());
    assertEquals(250, c.sharedState().operationTimeoutMs());
    assertEquals(c, NarwhalConfig.fromJson(withSection("cluster", c.toJson().encode())).cluster());
  }

  @Test
  void sharedStateGuardValuesAreValidated() {
    refused("{\"shared_state\": {\"operation_timeout_s\": 0}}", "cluster.shared_state.operation_timeout_s",
        "cluster.shared_state.operation_timeout_s: 0 is not valid: expected a number of seconds from 0.001 to 60");
    refused("{\"shared_state\": {\"failure_threshold\": 0}}", "cluster.shared_state.failure_threshold",
        "cluster.shared_state.failure_threshold: 0 is not valid: expected an integer from 1 to 1000");
    refused("{\"shared_state\": {\"reset_timeout_s\": \"soon\"}}", "cluster.shared_state.reset_timeout_s",
        "cluster.shared_state.reset_timeout_s: \"soon\" is not valid: expected a number of seconds from 0.01 to 3600");
    refused("{\"shared_state\": {\"timeout\": 1}}", "cluster.shared_state.timeout",
        "cluster.shared_state.timeout: unknown key");
  }

  @Test
  void tlsValuesAreValidated() {
    refused("{\"tls\": {\"enabled\": \"yes\"}}", "cluster.tls.enabled",
        "cluster.tls.enabled: \"yes\" is not valid: expected true or false");
    refused("{\"tls\": {\"enabled\": true}}", "cluster.tls.key_store",
        "cluster.tls.key_store: missing: expected the path of a PKCS12 key store (cluster.tls.enabled is true)");
    refused("{\"tls\": {\"enabled\": true, \"key_store\": \" \"}}", "cluster.tls.key_store",
        "cluster.tls.key_store: \" \" is not valid: expected the path of a PKCS12 key store (cluster.tls.enabled is true)");
    refused("{\"tls\": {\"key_store\": 5}}", "cluster.tls.key_store",
        "cluster.tls.key_store: 5 is not valid: expected a string");
    refused("{\"tls\": {\"enabled\": false, \"key_store_password_env\": \"\"}}", "cluster.tls.key_store_password_env",
        "cluster.tls.key_store_password_env: \"\" is not valid: expected a non-empty string");
    refused("{\"tls\": {\"trust_store\": \"x.p12\"}}", "cluster.tls.trust_store", "cluster.tls.trust_store: unknown key");
    refused("{\"tls\": true}", "cluster.tls", "cluster.tls: true is not valid: expected an object");
  }
}
