package narwhal.engines.sse;

/**
 * What one frame's choices generated, gathered the same way by every reading of a frame ({@link FrameScanner},
 * {@link FrameClassifier}'s Jackson and tree readings): a reading sets the fields of the choice it is in, and
 * {@link #endChoice()} appends them in choice order (text, reasoning_content, reasoning, content), ORs the tool
 * calls and keeps the last finish reason. One piece of text, the usual frame, is kept without a copy.
 */
final class ChoiceOutput {
  String choiceText;
  String reasoningContent;
  String reasoning;
  String content;
  boolean choiceToolCalls;
  String choiceFinish;

  /** The text of more than one piece, joined; {@link #piece} while there is at most one. */
  private final StringBuilder text = new StringBuilder();
  private String piece;
  private boolean joined;
  private boolean toolCalls;
  private String finishReason;
  private String reasoningField;

  /** Forgets the frame read before. */
  void reset() {
    text.setLength(0);
    piece = null;
    joined = false;
    toolCalls = false;
    finishReason = null;
    reasoningField = null;
  }

  void startChoice() {
    choiceText = null;
    choiceFinish = null;
    resetDelta();
  }

  void resetDelta() {
    reasoningContent = null;
    reasoning = null;
    content = null;
    choiceToolCalls = false;
  }

  void endChoice() {
    appendNonNull(choiceText);
    if (reasoningContent != null) reasoningField = "reasoning_content";
    else if (reasoning != null && reasoningField == null) reasoningField = "reasoning";
    appendNonNull(reasoningContent);
    appendNonNull(reasoning);
    appendNonNull(content);
    toolCalls |= choiceToolCalls;
    if (choiceFinish != null) finishReason = choiceFinish;
  }

  /** The generated text of the frame's choices, in choice order. */
  String text() {
    return joined ? text.toString() : piece == null ? "" : piece;
  }

  boolean hasText() {
    return joined ? text.length() > 0 : piece != null && !piece.isEmpty();
  }

  boolean toolCalls() {
    return toolCalls;
  }

  String finishReason() {
    return finishReason;
  }

  /** The name the frame's reasoning went under ({@code reasoning_content}, older vLLM, or {@code reasoning}); null: none. */
  String reasoningField() {
    return reasoningField;
  }

  /** No text and no tool call: a metadata frame. */
  boolean none() {
    return !hasText() && !toolCalls;
  }

  private void appendNonNull(String value) {
    if (value == null) return;
    if (joined) {
      text.append(value);
    } else if (piece == null) {
      piece = value;
    } else {
      text.append(piece).append(value);
      joined = true;
    }
  }
}
