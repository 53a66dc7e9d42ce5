package narwhal.bench.report;

import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.LineAndShapeRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.awt.BasicStroke;
import java.awt.Color;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * PNG charts with JFreeChart, headless: lines or bars over categories (one series per path measured, e.g.
 * "direct" and "router"), and time series in stacked panels sharing the time axis. A chart that cannot be
 * drawn (no fonts on a minimal machine) is skipped with a note; the run goes on.
 */
public final class ChartWriter {
  private static final int WIDTH = 900;
  private static final int HEIGHT = 520;
  /** Blue, red, green, orange, purple, brown: tells paths apart in print and for most colour-blind readers. */
  private static final Color[] PALETTE = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0xff7f0e),
      new Color(0x9467bd), new Color(0x8c564b)};

  static {
    System.setProperty("java.awt.headless", "true");
  }

  private ChartWriter() {
  }

  /** One panel of a time-series chart: its y-axis label and named series of (x, y) points. */
  public record Panel(String yLabel, Map<String, List<double[]>> series) {
  }

  /** Lines across categories: {@code series name → (category → value)}, categories in insertion order. */
  public static Path categoryLines(Path file, String title, String xLabel, String yLabel, Map<String, Map<String, Double>> series) {
    return save(file, () -> {
      JFreeChart chart = ChartFactory.createLineChart(title, xLabel, yLabel, dataset(series), PlotOrientation.VERTICAL, true, false, false);
      CategoryPlot plot = chart.getCategoryPlot();
      LineAndShapeRenderer renderer = new LineAndShapeRenderer(true, true);
      for (int i = 0; i < series.size(); i++) {
        renderer.setSeriesPaint(i, PALETTE[i % PALETTE.length]);
        renderer.setSeriesStroke(i, new BasicStroke(2.5f));
      }
      plot.setRenderer(renderer);
      return style(chart, plot);
    });
  }

  /** Grouped bars: {@code series name → (category → value)}. */
  public static Path bars(Path file, String title, String xLabel, String yLabel, Map<String, Map<String, Double>> series) {
    return save(file, () -> {
      JFreeChart chart = ChartFactory.createBarChart(title, xLabel, yLabel, dataset(series), PlotOrientation.VERTICAL, true, false, false);
      CategoryPlot plot = chart.getCategoryPlot();
      BarRenderer renderer = (BarRenderer) plot.getRenderer();
      renderer.setBarPainter(new StandardBarPainter());
      renderer.setShadowVisible(false);
      for (int i = 0; i < series.size(); i++) renderer.setSeriesPaint(i, PALETTE[i % PALETTE.length]);
      return style(chart, plot);
    });
  }

  /** Stacked panels over a shared x axis (seconds). */
  public static Path timeSeries(Path file, String title, String xLabel, List<Panel> panels) {
    return save(file, () -> {
      CombinedDomainXYPlot plot = new CombinedDomainXYPlot(new NumberAxis(xLabel));
      int colour = 0;
      for (Panel panel : panels) {
        XYSeriesCollection data = new XYSeriesCollection();
        panel.series().forEach((name, points) -> {
          XYSeries s = new XYSeries(name, false, true);
          points.forEach(p -> s.add(p[0], p[1]));
          data.addSeries(s);
        });
        NumberAxis y = new NumberAxis(panel.yLabel());
        y.setAutoRangeIncludesZero(true);
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, false);
        for (int i = 0; i < panel.series().size(); i++) {
          renderer.setSeriesPaint(i, PALETTE[(i + colour) % PALETTE.length]);
          renderer.setSeriesStroke(i, new BasicStroke(2f));
          if (panel.series().values().stream().skip(i).findFirst().map(List::size).orElse(0) < 12) renderer.setSeriesShapesVisible(i, true);
        }
        colour += panel.series().size();
        XYPlot sub = new XYPlot(data, null, y, renderer);
        sub.setBackgroundPaint(Color.WHITE);
        sub.setRangeGridlinePaint(Color.LIGHT_GRAY);
        sub.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.add(sub, 1);
      }
      JFreeChart chart = new JFreeChart(title, JFreeChart.DEFAULT_TITLE_FONT, plot, true);
      chart.setBackgroundPaint(Color.WHITE);
      return chart;
    });
  }

  private static JFreeChart style(JFreeChart chart, CategoryPlot plot) {
    chart.setBackgroundPaint(Color.WHITE);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinesVisible(true);
    return chart;
  }

  private static DefaultCategoryDataset dataset(Map<String, Map<String, Double>> series) {
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    series.forEach((name, values) -> values.forEach((category, v) -> data.addValue(v, name, category)));
    return data;
  }

  private static Path save(Path file, java.util.function.Supplier<JFreeChart> chart) {
    try {
      Files.createDirectories(file.getParent());
      ChartUtils.saveChartAsPNG(file.toFile(), chart.get(), WIDTH, HEIGHT);
      System.out.println("chart: " + file);
      return file;
    } catch (Throwable e) {
      System.out.println("note: chart " + file.getFileName() + " skipped: " + e);
      return null;
    }
  }
}
