import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXConfiguration.SearchStepSemantics;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.EDDifferentialPrivacy;
import org.deidentifier.arx.dp.ParameterCalculation;
import org.deidentifier.arx.metric.Metric;

/**
 * kanon's peer for [privacy] differential_privacy: ARX 3.9.2's SafePub (EDDifferentialPrivacy,
 * data-dependent, with a DP search budget and a step limit in expansions), and its
 * ParameterCalculation on a grid for tests/dp.rs.
 *
 * Usage (through bench/arx/arx-safepub, or `java -cp JARS SafePub.java`):
 *   --params E:D[,E:D...]      print "E D beta k" per pair (ParameterCalculation), nothing else
 *   --data FILE --hier DIR --qis a,b,c --epsilon E --delta D --search-epsilon S --steps N
 *   [--metric loss|precision|dm] [--out FILE]
 * Prints one JSON line: the node, the rows released, the times.
 */
public class SafePub {

    public static void main(String[] args) throws Exception {
        String data = null, hier = null, qis = null, metric = "loss", out = null, params = null;
        double epsilon = 2d, delta = 1e-6d, search = 0.1d;
        int steps = 300;
        for (int i = 0; i + 1 < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
            case "--params": params = v; break;
            case "--data": data = v; break;
            case "--hier": hier = v; break;
            case "--qis": qis = v; break;
            case "--epsilon": epsilon = Double.parseDouble(v); break;
            case "--delta": delta = Double.parseDouble(v); break;
            case "--search-epsilon": search = Double.parseDouble(v); break;
            case "--steps": steps = Integer.parseInt(v); break;
            case "--metric": metric = v; break;
            case "--out": out = v; break;
            default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (params != null) {
            for (String pair : params.split(",")) {
                String[] p = pair.split(":");
                double e = Double.parseDouble(p[0]), d = Double.parseDouble(p[1]);
                try {
                    ParameterCalculation c = new ParameterCalculation(e, d);
                    System.out.println(String.format(Locale.ROOT, "%s %s %.17g %d", p[0], p[1], c.getBeta(), c.getK()));
                } catch (Exception ex) {
                    System.out.println(p[0] + " " + p[1] + " error error");
                }
            }
            return;
        }
        long t0 = System.nanoTime();
        Data input = Data.create(new File(data), StandardCharsets.UTF_8, ';');
        DataHandle handle = input.getHandle();
        java.util.List<String> qiList = java.util.Arrays.asList(qis.split(","));
        for (int c = 0; c < handle.getNumColumns(); c++) {
            String col = handle.getAttributeName(c);
            if (qiList.contains(col)) {
                input.getDefinition().setAttributeType(col,
                    Hierarchy.create(new File(hier, "hierarchy_" + col + ".csv"), StandardCharsets.UTF_8, ';'));
            } else {
                input.getDefinition().setAttributeType(col, AttributeType.INSENSITIVE_ATTRIBUTE);
            }
        }
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new EDDifferentialPrivacy(epsilon, delta, null, true));
        config.setDPSearchBudget(search);
        config.setHeuristicSearchStepLimit(steps, SearchStepSemantics.EXPANSIONS);
        config.setSuppressionLimit(1d);
        switch (metric) {
        case "loss": config.setQualityModel(Metric.createLossMetric()); break;
        case "precision": config.setQualityModel(Metric.createPrecisionMetric()); break;
        case "dm": config.setQualityModel(Metric.createDiscernabilityMetric()); break;
        default: throw new IllegalArgumentException("unknown metric " + metric);
        }
        long a0 = System.nanoTime();
        ARXResult result = new ARXAnonymizer().anonymize(input, config);
        long a1 = System.nanoTime();
        ARXNode opt = result.getGlobalOptimum();
        StringBuilder levels = new StringBuilder("[");
        int released = 0;
        if (opt != null) {
            for (int i = 0; i < qiList.size(); i++) {
                levels.append(i > 0 ? "," : "").append(opt.getGeneralization(qiList.get(i)));
            }
            DataHandle output = result.getOutput(opt, false);
            for (int r = 0; r < output.getNumRows(); r++) {
                if (!output.isOutlier(r)) released++;
            }
            if (out != null) output.save(new File(out), ';');
        }
        levels.append(']');
        long t1 = System.nanoTime();
        System.out.println(String.format(Locale.ROOT,
            "{\"tool\":\"arx-safepub\",\"rows\":%d,\"levels\":%s,\"released\":%d,\"anonymize_ms\":%.1f,\"total_ms\":%.1f,\"nodes_checked\":%d}",
            handle.getNumRows(), levels, released, (a1 - a0) / 1e6, (t1 - t0) / 1e6,
            result.getProcessStatistics().getNumberOfSteps()));
    }
}
