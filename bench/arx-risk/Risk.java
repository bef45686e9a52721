import java.io.File;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.ARXSolverConfiguration;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.DataSubset;
import org.deidentifier.arx.criteria.Inclusion;
import org.deidentifier.arx.risk.RiskEstimateBuilder;
import org.deidentifier.arx.risk.RiskModelHistogram;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness.PopulationUniquenessModel;
import org.deidentifier.arx.risk.RiskModelSampleRiskDistribution;
import org.deidentifier.arx.risk.RiskModelSampleRisks;
import org.deidentifier.arx.risk.RiskModelSampleSummary;
import org.deidentifier.arx.risk.RiskModelSampleUniqueness;

import de.linearbits.newtonraphson.Function2D;
import de.linearbits.newtonraphson.NewtonRaphson2D;
import de.linearbits.newtonraphson.Vector2D;

/**
 * ARX's re-identification risk analysis of a CSV table, as JSON on stdout: what kanon's
 * src/risk.rs is checked against (tests/risk.rs).
 *
 * Usage: java -cp ... Risk --data FILE --qis a,b,c [--delimiter C] [--threshold T]
 *                          [--fraction F | --population N] [--population-table FILE]
 *
 * --fraction F: ARXPopulationModel.create(n, F) (ARX rounds n / F to the population size);
 * --population N: ARXPopulationModel.create(N). Default: --fraction 0.01.
 * --population-table FILE: a table holding the sample's records and more (same columns); the
 * sample's records are matched to its rows and analysed as ARX's research subset of it, so the
 * journalist and marketer figures use its class sizes. Without it they use the sample's.
 * The solver is ARX's default (ARXSolverConfiguration: accuracy 1e-6, deterministic start values).
 */
public class Risk {

    public static void main(String[] args) throws Exception {
        String dataPath = null, populationTable = null;
        String[] qis = null;
        char delimiter = ',';
        double threshold = 0.2d, fraction = 0.01d;
        long population = -1;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
            case "--data":             dataPath = args[++i]; break;
            case "--qis":              qis = args[++i].split(","); break;
            case "--delimiter":        delimiter = args[++i].charAt(0); break;
            case "--threshold":        threshold = Double.parseDouble(args[++i]); break;
            case "--fraction":         fraction = Double.parseDouble(args[++i]); break;
            case "--population":       population = Long.parseLong(args[++i]); break;
            case "--population-table": populationTable = args[++i]; break;
            default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (dataPath == null || qis == null) throw new IllegalArgumentException("--data and --qis are required");

        // The analysed handle: the table itself, or the sample as a subset of the population table.
        DataHandle handle;
        if (populationTable == null) {
            Data data = Data.create(new File(dataPath), StandardCharsets.UTF_8, delimiter);
            define(data, qis);
            handle = data.getHandle();
        } else {
            Data data = Data.create(new File(populationTable), StandardCharsets.UTF_8, delimiter);
            define(data, qis);
            DataHandle all = data.getHandle();
            Set<Integer> rows = matchRows(all, dataPath, delimiter);
            handle = researchSubset(all, DataSubset.create(data, rows));
        }
        int n = handle.getNumRows();
        ARXPopulationModel model = population > 0 ? ARXPopulationModel.create(population)
                                                  : ARXPopulationModel.create(n, fraction);

        RiskEstimateBuilder builder = handle.getRiskEstimator(model);
        RiskModelHistogram histogram = builder.getEquivalenceClassModel();
        RiskModelSampleSummary summary = builder.getSampleBasedRiskSummary(threshold);
        RiskModelSampleRisks sampleRisks = builder.getSampleBasedReidentificationRisk();
        RiskModelSampleUniqueness sampleUniqueness = builder.getSampleBasedUniquenessRisk();
        RiskModelPopulationUniqueness pu = builder.getPopulationBasedUniquenessRisk();
        RiskModelSampleRiskDistribution distribution = builder.getSampleBasedRiskDistribution();

        StringBuilder out = new StringBuilder("{");
        out.append("\"arx\":\"3.9.2\"");
        out.append(",\"records\":").append((long) histogram.getNumRecords());
        out.append(",\"classes\":").append((long) histogram.getNumClasses());
        int[] h = histogram.getHistogram();
        out.append(",\"histogram\":[");
        for (int i = 0; i < h.length; i += 2) {
            out.append(i == 0 ? "" : ",").append('[').append(h[i]).append(',').append(h[i + 1]).append(']');
        }
        out.append(']');
        out.append(",\"population_size\":").append(model.getPopulationSize());
        out.append(",\"sampling_fraction\":").append(num((double) n / (double) model.getPopulationSize()));
        out.append(",\"threshold\":").append(num(threshold));
        RiskModelSampleSummary.ProsecutorRisk p = summary.getProsecutorRisk();
        RiskModelSampleSummary.JournalistRisk j = summary.getJournalistRisk();
        out.append(",\"prosecutor\":{\"records_at_risk\":").append(num(p.getRecordsAtRisk()))
           .append(",\"highest_risk\":").append(num(p.getHighestRisk()))
           .append(",\"success_rate\":").append(num(p.getSuccessRate())).append('}');
        out.append(",\"journalist\":{\"records_at_risk\":").append(num(j.getRecordsAtRisk()))
           .append(",\"highest_risk\":").append(num(j.getHighestRisk()))
           .append(",\"success_rate\":").append(num(j.getSuccessRate())).append('}');
        out.append(",\"marketer\":{\"success_rate\":").append(num(summary.getMarketerRisk().getSuccessRate())).append('}');
        out.append(",\"sample_risks\":{\"average\":").append(num(sampleRisks.getAverageRisk()))
           .append(",\"highest\":").append(num(sampleRisks.getHighestRisk()))
           .append(",\"lowest\":").append(num(sampleRisks.getLowestRisk()))
           .append(",\"records_at_highest\":").append(num(sampleRisks.getFractionOfRecordsAffectedByHighestRisk()))
           .append('}');
        out.append(",\"sample_uniqueness\":").append(num(sampleUniqueness.getFractionOfUniqueRecords()));
        // Fractions of the population; an estimate ARX does not have (NaN or 0 inside) is null.
        out.append(",\"population_uniqueness\":{");
        out.append("\"pitman\":").append(estimate(pu, PopulationUniquenessModel.PITMAN));
        out.append(",\"zayatz\":").append(estimate(pu, PopulationUniquenessModel.ZAYATZ));
        out.append(",\"snb\":").append(estimate(pu, PopulationUniquenessModel.SNB));
        out.append(",\"dankar\":").append(pu.isAvailableEstimateDankar() ? num(pu.getFractionOfUniqueTuplesDankar()) : "null");
        PopulationUniquenessModel used = pu.getPopulationUniquenessModel();
        out.append(",\"model\":").append(used == null || used == PopulationUniquenessModel.DANKAR ? "null"
                                         : "\"" + used.name().toLowerCase() + "\"");
        out.append('}');
        // Not ARX's figure: the SNB model on Chen & McNulty's equations (see snbPublished).
        out.append(",\"snb_published\":").append(num(snbPublished(histogram, model.getPopulationSize())));
        double[] low = distribution.getAvailableLowerRiskThresholds();
        double[] high = distribution.getAvailableUpperRiskThresholds();
        double[] share = distribution.getFractionOfRecordsForRiskThresholds();
        out.append(",\"distribution\":[");
        for (int i = 0; i < share.length; i++) {
            out.append(i == 0 ? "" : ",").append("{\"low\":").append(num(low[i])).append(",\"high\":")
               .append(num(high[i])).append(",\"share\":").append(num(share[i])).append('}');
        }
        out.append("]}");
        System.out.println(out);
    }

    /**
     * The input handle's view of the given research subset, as ARX sets it up for a configuration
     * holding the subset (DataRegistry.createInputSubset, which is package-private: reached by
     * reflection). Its superset is the whole table, so the summary's journalist and marketer
     * figures take their population class sizes from it.
     */
    static DataHandle researchSubset(DataHandle input, DataSubset subset) throws Exception {
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new Inclusion(subset));
        Method getRegistry = DataHandle.class.getDeclaredMethod("getRegistry");
        getRegistry.setAccessible(true);
        Object registry = getRegistry.invoke(input);
        Method create = registry.getClass().getDeclaredMethod("createInputSubset", ARXConfiguration.class);
        create.setAccessible(true);
        create.invoke(registry, config);
        return input.getView();
    }

    /** QIs are quasi-identifying (no hierarchy: the risk analysis groups by the values), the rest insensitive. */
    static void define(Data data, String[] qis) {
        DataHandle handle = data.getHandle();
        Set<String> q = new HashSet<>(Arrays.asList(qis));
        for (int c = 0; c < handle.getNumColumns(); c++) {
            String column = handle.getAttributeName(c);
            data.getDefinition().setAttributeType(column, q.contains(column) ? AttributeType.QUASI_IDENTIFYING_ATTRIBUTE
                                                                              : AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        for (String column : qis) {
            if (handle.getColumnIndexOf(column) < 0) throw new IllegalArgumentException("no column " + column);
        }
    }

    /** The population table's rows that hold the sample's records: each sample row matched to an unused equal row. */
    static Set<Integer> matchRows(DataHandle population, String samplePath, char delimiter) throws Exception {
        Map<String, ArrayDeque<Integer>> rowsByRecord = new HashMap<>();
        int columns = population.getNumColumns();
        for (int r = 0; r < population.getNumRows(); r++) {
            String[] values = new String[columns];
            for (int c = 0; c < columns; c++) values[c] = population.getValue(r, c);
            rowsByRecord.computeIfAbsent(String.join("\u0000", values), k -> new ArrayDeque<>()).add(r);
        }
        Data sample = Data.create(new File(samplePath), StandardCharsets.UTF_8, delimiter);
        DataHandle s = sample.getHandle();
        if (s.getNumColumns() != columns) throw new IllegalArgumentException("the sample and the population table differ in columns");
        Set<Integer> rows = new LinkedHashSet<>();
        for (int r = 0; r < s.getNumRows(); r++) {
            String[] values = new String[columns];
            for (int c = 0; c < columns; c++) values[c] = s.getValue(r, c);
            ArrayDeque<Integer> free = rowsByRecord.get(String.join("\u0000", values));
            if (free == null || free.isEmpty()) throw new IllegalArgumentException("sample row " + (r + 1) + " is not in the population table");
            rows.add(free.poll());
        }
        return rows;
    }

    /**
     * The SNB model as published, solved by the solver ARX bundles (de.linearbits NewtonRaphson2D,
     * ARX's default configuration, from (1, 1) as ARX's ModelSNB, derivatives by its secant method),
     * as a fraction of N; NaN when it has no solution or the estimate is outside (0, N].
     * ARX 3.9.2's own SNB multiplies the c2 equation by (1 - d)^(a + 2) where Chen & McNulty (1998)
     * divide by it, and its Shlosser estimate of K adds (1 - f^2)^i c_i - 1 per class size where
     * Haas et al. (1995) add ((1 - f^2)^i - (1 - f)^i) c_i: its solver finds no root on the tables
     * tried. kanon uses the published equations; this is what its SNB is checked against.
     *   c1 = K f (b / L)^a (1 + a d / L),  c2 = K a b^a f^2 (1 - b) (2 - (1 - a) d) / (2 L^(a + 2)),
     *   d = (1 - f)(1 - b), L = 1 - d, f = n / N; uniques = K b^a.
     */
    static double snbPublished(RiskModelHistogram histogram, long populationSize) {
        int[] h = histogram.getHistogram();
        double n = histogram.getNumRecords(), u = histogram.getNumClasses(), f = n / populationSize;
        double c1 = 0, c2 = 0, v1 = 0, v2 = 0, v3 = 0, v4 = 0;
        for (int i = 0; i < h.length; i += 2) {
            double size = h[i], count = h[i + 1];
            if (h[i] == 1) c1 = count;
            if (h[i] == 2) c2 = count;
            v1 += size * f * f * Math.pow(1 - f * f, size - 1) * count;
            v2 += (Math.pow(1 - f * f, size) - Math.pow(1 - f, size)) * count;
            v3 += Math.pow(1 - f, size) * count;
            v4 += size * f * Math.pow(1 - f, size - 1) * count;
        }
        if (c1 == 0) return 0d;
        final double k = v2 > 0 && v4 > 0 ? u + c1 * (v1 / v2) * (v3 / v4) * (v3 / v4) : u;
        final double fc1 = c1, fc2 = c2;
        Function2D e1 = x -> {
            double a = x.x, b = x.y, d = (1 - f) * (1 - b), l = 1 - d;
            return k * f * Math.pow(b / l, a) * (1 + a * d / l) - fc1;
        };
        Function2D e2 = x -> {
            double a = x.x, b = x.y, d = (1 - f) * (1 - b), l = 1 - d;
            return k * a * Math.pow(b, a) * f * f * (1 - b) * (2 - (1 - a) * d) / (2 * Math.pow(l, a + 2)) - fc2;
        };
        Vector2D result = new NewtonRaphson2D(e1, e2).configure(ARXSolverConfiguration.create()).solve();
        double uniques = k * Math.pow(result.y, result.x);
        return uniques > 0 && uniques <= populationSize ? uniques / populationSize : Double.NaN;
    }

    static String estimate(RiskModelPopulationUniqueness pu, PopulationUniquenessModel m) {
        return pu.isAvailableEstimate(m) ? num(pu.getFractionOfUniqueTuples(m)) : "null";
    }

    /** A double as JSON, with every digit Java has (shortest round-trip form); NaN and infinities as null. */
    static String num(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "null" : Double.toString(v);
    }
}
