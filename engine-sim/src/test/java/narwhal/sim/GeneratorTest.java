package narwhal.sim;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GeneratorTest {

  @Test
  void sameInputsGiveTheSameOutput() {
    Generator.Output a = Generator.generate("tell me about rivers", 7, 0.5, 64, false);
    Generator.Output b = Generator.generate("tell me about rivers", 7, 0.5, 64, false);
    assertEquals(a.text(), b.text());
    assertEquals(a.finishReason(), b.finishReason());
  }

  @Test
  void seedTemperatureAndPromptChangeTheOutput() {
    Set<String> outputs = new HashSet<>();
    outputs.add(Generator.generate("p", 0, 1.0, 64, false).text());
    outputs.add(Generator.generate("p", 1, 1.0, 64, false).text());
    outputs.add(Generator.generate("p", 0, 0.0, 64, false).text());
    outputs.add(Generator.generate("q", 0, 1.0, 64, false).text());
    assertEquals(4, outputs.size());
  }

  @Test
  void naturalLengthIsBetween4And32AndMaxTokensCutsWithLength() {
    for (int i = 0; i < 200; i++) {
      Generator.Output natural = Generator.generate("prompt number " + i, 0, 1.0, 1000, false);
      int n = natural.tokens().size();
      assertTrue(n >= 4 && n <= 32, "natural length " + n);
      assertEquals("stop", natural.finishReason());
      natural.tokens().forEach(t -> assertTrue(t.startsWith(" ") && t.length() > 1));

      Generator.Output cut = Generator.generate("prompt number " + i, 0, 1.0, 3, false);
      assertEquals(3, cut.tokens().size());
      assertEquals("length", cut.finishReason());
      assertEquals(natural.tokens().subList(0, 3), cut.tokens());
    }
  }

  @Test
  void ignoreEosGeneratesExactlyMaxTokens() {
    Generator.Output out = Generator.generate("x", 0, 1.0, 100, true);
    assertEquals(100, out.tokens().size());
    assertEquals("length", out.finishReason());
  }

  @Test
  void promptTokensAreWhitespaceSeparatedWords() {
    assertEquals(4, Generator.countTokens("  the quick\tbrown\nfox "));
    assertEquals(0, Generator.countTokens("   "));
  }
}
