package narwhal.engines.sse;

/**
 * What a stream's frames are read for, so that each frame is read once. {@link #RELAY}: the frames go to a client
 * as the engine's bytes, so only what classification needs is read ({@link FrameScanner}, Jackson's streaming parser
 * for what it declines) and {@link SseFrame#json()} parses on demand. {@link #ASSEMBLY}: the frames are folded into
 * one answer, which needs every field, so each frame is parsed once into its JSON tree, classified from that tree,
 * and {@link SseFrame#json()} returns it.
 */
public enum FrameUse {
  RELAY,
  ASSEMBLY
}
