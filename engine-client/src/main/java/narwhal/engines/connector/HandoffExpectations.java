package narwhal.engines.connector;

/**
 * What a valid handoff must agree with: the configured NIXL transfer mode, the producer's and the consumer's
 * connectors, and the producer's attested KV side channel ({@code host:port}, or null when unknown).
 */
public record HandoffExpectations(String transferMode, String producerConnector, String consumerConnector,
                                  String producerSideChannel) {

  public static final String DEFAULT_TRANSFER_MODE = "pull";
  public static final String DEFAULT_CONNECTOR = "nixl";

  /** NIXL pull mode on both sides, side channel unknown. */
  public static HandoffExpectations nixlPull() {
    return new HandoffExpectations(DEFAULT_TRANSFER_MODE, DEFAULT_CONNECTOR, DEFAULT_CONNECTOR, null);
  }

  public HandoffExpectations withSideChannel(String sideChannel) {
    return new HandoffExpectations(transferMode, producerConnector, consumerConnector, sideChannel);
  }
}
