import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXSolverConfiguration;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXProcessStatistics;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.DataType;
import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.DataSubset;
import org.deidentifier.arx.criteria.AverageReidentificationRisk;
import org.deidentifier.arx.criteria.DPresence;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.KMap;
import org.deidentifier.arx.criteria.PopulationUniqueness;
import org.deidentifier.arx.criteria.SampleUniqueness;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness.PopulationUniquenessModel;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.criteria.PrivacyCriterion;
import org.deidentifier.arx.criteria.RecursiveCLDiversity;
import org.deidentifier.arx.metric.InformationLoss;
import org.deidentifier.arx.metric.Metric;

/**
 * kanon's peer harness for privacy models beyond k: ARX 3.9.2 (global recoding, optimal search) with
 * k-anonymity plus l-diversity / t-closeness criteria on sensitive columns. Same approach and the same
 * JSON fields as ../shared/peers/arx/Bench.java, plus the criteria, the loss (absolute and relative to
 * the lattice's range), the classes of the release and, per sensitive column, what the release
 * achieves (recomputed here from ARX's output, to compare with kanon's report).
 *
 * Usage (through bench/arx/arx-models):
 *   --data FILE [--hier DIR] [--qis a,b,c] [--k N (0: no k-anonymity)] [--budget F]
 *   [--metric loss|precision|dm] [--out FILE] [--label NAME]
 *   criteria (repeatable, any mix; each makes COL a SENSITIVE attribute):
 *   --t-equal COL:T                 EqualDistanceTCloseness
 *   --t-ordered COL:T               OrderedDistanceTCloseness (order of COL's data type, see --type)
 *   --t-hier COL:T[:FILE]           HierarchicalDistanceTCloseness (FILE default DIR/hierarchy_COL.csv)
 *   --l-distinct COL:L              DistinctLDiversity
 *   --l-entropy COL:L               EntropyLDiversity, Shannon estimator
 *   --l-recursive COL:C:L           RecursiveCLDiversity
 *   --type COL:integer|decimal|string   data type of a (sensitive) column (default string)
 *   risk models (on the QIs; population from --fraction F, default 0.01):
 *   --avg-risk T | --avg-risk T:H:R AverageReidentificationRisk (relaxed with highest H, records at risk R)
 *   --sample-uniq T                 SampleUniqueness
 *   --pop-uniq T:dankar|pitman|zayatz|snb   PopulationUniqueness
 *   --k-map K:ALPHA:poisson|ztp     KMap, estimated
 *   --subset-every N                the research subset: rows 0, N, 2N, ... of --data (the population)
 *   --d-presence MIN:MAX            DPresence over that subset
 *   --k-map-exact K                 KMap over that subset
 *
 * Prints one JSON line. anonymize_ms is System.nanoTime() around ARXAnonymizer.anonymize() alone;
 * load_ms covers reading data + hierarchies; post_ms covers building the output handle, counting
 * suppressed rows, the release measures and (with --out) writing the output CSV.
 */
public class Models {

    static final String[] DEFAULT_QIS = { "age", "education", "marital-status", "native-country",
                                          "race", "sex", "workclass", "salary-class" };

    /** One criterion as given on the command line. */
    static final class Spec {
        final String kind, column, file;
        final double a, b; // t | l | (c, l)
        Spec(String kind, String column, double a, double b, String file) {
            this.kind = kind; this.column = column; this.a = a; this.b = b; this.file = file;
        }
    }

    public static void main(String[] args) throws Exception {
        String dataPath = null, hierDir = null, metricName = "loss", out = null, label = null;
        int k = 5;
        double budget = 0.01d;
        String[] qis = DEFAULT_QIS;
        List<Spec> specs = new ArrayList<>();
        List<String[]> risks = new ArrayList<>();
        double fraction = 0.01d;
        int subsetEvery = 0;
        Map<String, String> types = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) { usage(); return; }
            if (i + 1 >= args.length) throw new IllegalArgumentException(a + " needs a value");
            String v = args[++i];
            switch (a) {
            case "--data":   dataPath = v; break;
            case "--hier":   hierDir = v; break;
            case "--k":      k = Integer.parseInt(v); break;
            case "--budget": budget = Double.parseDouble(v); break;
            case "--metric": metricName = v; break;
            case "--qis":    qis = v.split(","); break;
            case "--out":    out = v; break;
            case "--label":  label = v; break;
            case "--type": {
                String[] p = parts(a, v, 2, 2);
                types.put(p[0], p[1]);
                break;
            }
            case "--t-equal": case "--t-ordered": case "--l-distinct": case "--l-entropy": {
                String[] p = parts(a, v, 2, 2);
                specs.add(new Spec(a.substring(2), p[0], Double.parseDouble(p[1]), 0, null));
                break;
            }
            case "--avg-risk": case "--sample-uniq": case "--pop-uniq": case "--k-map": {
                String[] p = v.split(":");
                risks.add(new String[] { a.substring(2), v });
                break;
            }
            case "--fraction": fraction = Double.parseDouble(v); break;
            case "--subset-every": subsetEvery = Integer.parseInt(v); break;
            case "--d-presence": case "--k-map-exact": risks.add(new String[] { a.substring(2), v }); break;
            case "--t-hier": {
                String[] p = parts(a, v, 2, 3);
                specs.add(new Spec("t-hier", p[0], Double.parseDouble(p[1]), 0, p.length > 2 ? p[2] : null));
                break;
            }
            case "--l-recursive": {
                String[] p = parts(a, v, 3, 3);
                specs.add(new Spec("l-recursive", p[0], Double.parseDouble(p[1]), Double.parseDouble(p[2]), null));
                break;
            }
            default: throw new IllegalArgumentException("unknown argument " + a + " (see --help)");
            }
        }
        if (dataPath == null) throw new IllegalArgumentException("--data is required (see --help)");
        if (hierDir == null) hierDir = new File(dataPath).getAbsoluteFile().getParent();
        if (k < 1 && specs.isEmpty() && risks.isEmpty()) throw new IllegalArgumentException("no criterion: --k 0 and no model");

        long t0 = System.nanoTime();
        Data data = Data.create(new File(dataPath), StandardCharsets.UTF_8, ';');
        DataHandle input = data.getHandle();
        List<String> qiList = Arrays.asList(qis);
        Set<String> sensitive = new LinkedHashSet<>();
        for (Spec s : specs) {
            if (qiList.contains(s.column))
                throw new IllegalArgumentException(s.column + " is a quasi-identifier; a sensitive column cannot be");
            if (input.getColumnIndexOf(s.column) < 0)
                throw new IllegalArgumentException("no column " + s.column + " in " + dataPath);
            sensitive.add(s.column);
        }
        for (String q : qis)
            if (input.getColumnIndexOf(q) < 0) throw new IllegalArgumentException("no column " + q + " in " + dataPath);
        for (int c = 0; c < input.getNumColumns(); c++) {
            String col = input.getAttributeName(c);
            if (qiList.contains(col)) {
                File hf = new File(hierDir, "hierarchy_" + col + ".csv");
                data.getDefinition().setAttributeType(col, Hierarchy.create(hf, StandardCharsets.UTF_8, ';'));
            } else if (sensitive.contains(col)) {
                data.getDefinition().setAttributeType(col, AttributeType.SENSITIVE_ATTRIBUTE);
            } else {
                data.getDefinition().setAttributeType(col, AttributeType.INSENSITIVE_ATTRIBUTE);
            }
        }
        for (Map.Entry<String, String> e : types.entrySet()) {
            switch (e.getValue()) {
            case "integer": data.getDefinition().setDataType(e.getKey(), DataType.INTEGER); break;
            case "decimal": data.getDefinition().setDataType(e.getKey(), DataType.DECIMAL); break;
            case "string":  data.getDefinition().setDataType(e.getKey(), DataType.STRING); break;
            default: throw new IllegalArgumentException("unknown type " + e.getValue());
            }
        }
        List<PrivacyCriterion> criteria = new ArrayList<>();
        Map<String, String[][]> emdHierarchies = new HashMap<>();
        if (k >= 1) criteria.add(new KAnonymity(k));
        ARXPopulationModel population = ARXPopulationModel.create(input.getNumRows(), fraction);
        DataSubset subset = null;
        if (subsetEvery > 0) {
            Set<Integer> rowsIn = new java.util.HashSet<>();
            for (int r = 0; r < input.getNumRows(); r += subsetEvery) rowsIn.add(r);
            subset = DataSubset.create(data, rowsIn);
        }
        for (String[] r : risks) {
            String[] p = r[1].split(":");
            switch (r[0]) {
            case "avg-risk":
                criteria.add(p.length == 1 ? new AverageReidentificationRisk(Double.parseDouble(p[0]))
                    : new AverageReidentificationRisk(Double.parseDouble(p[0]), Double.parseDouble(p[1]), Double.parseDouble(p[2])));
                break;
            case "sample-uniq": criteria.add(new SampleUniqueness(Double.parseDouble(p[0]))); break;
            case "pop-uniq":
                // Diagnostics: ARX_SOLVER_MS=N gives the solver N ms a try and 10 N in all (ARX's default: 100 and 1000).
                String ms = System.getenv("ARX_SOLVER_MS");
                ARXSolverConfiguration solver = ARXSolverConfiguration.create();
                if (ms != null) solver = solver.timePerTry(Integer.parseInt(ms)).timeTotal(10 * Integer.parseInt(ms));
                criteria.add(new PopulationUniqueness(Double.parseDouble(p[0]),
                    PopulationUniquenessModel.valueOf(p[1].toUpperCase(Locale.ROOT)), population, solver));
                break;
            case "d-presence":
                criteria.add(new DPresence(Double.parseDouble(p[0]), Double.parseDouble(p[1]), subset));
                break;
            case "k-map-exact": criteria.add(new KMap(Integer.parseInt(p[0]), subset)); break;
            case "k-map":
                criteria.add(new KMap(Integer.parseInt(p[0]), Double.parseDouble(p[1]), population,
                    p[2].equals("poisson") ? KMap.CellSizeEstimator.POISSON : KMap.CellSizeEstimator.ZERO_TRUNCATED_POISSON));
                break;
            default: throw new IllegalStateException(r[0]);
            }
        }
        for (Spec s : specs) {
            switch (s.kind) {
            case "t-equal":     criteria.add(new EqualDistanceTCloseness(s.column, s.a)); break;
            case "t-ordered":   criteria.add(new OrderedDistanceTCloseness(s.column, s.a)); break;
            case "t-hier": {
                File hf = s.file != null ? new File(s.file) : new File(hierDir, "hierarchy_" + s.column + ".csv");
                Hierarchy h = Hierarchy.create(hf, StandardCharsets.UTF_8, ';');
                emdHierarchies.put(s.column, h.getHierarchy());
                criteria.add(new HierarchicalDistanceTCloseness(s.column, s.a, h));
                break;
            }
            case "l-distinct":  criteria.add(new DistinctLDiversity(s.column, (int) s.a)); break;
            case "l-entropy":   criteria.add(new EntropyLDiversity(s.column, s.a, EntropyLDiversity.EntropyEstimator.SHANNON)); break;
            case "l-recursive": criteria.add(new RecursiveCLDiversity(s.column, s.a, (int) s.b)); break;
            default: throw new IllegalStateException(s.kind);
            }
        }
        int rows = input.getNumRows();
        long t1 = System.nanoTime();

        ARXConfiguration config = ARXConfiguration.create();
        for (PrivacyCriterion c : criteria) config.addPrivacyModel(c);
        config.setSuppressionLimit(budget);
        switch (metricName) {
        case "loss":      config.setQualityModel(Metric.createLossMetric()); break;
        case "precision": config.setQualityModel(Metric.createPrecisionMetric()); break;
        case "dm":        config.setQualityModel(Metric.createDiscernabilityMetric()); break;
        default: throw new IllegalArgumentException("unknown metric " + metricName);
        }

        // Diagnostics: ARX_ONLY_NODE=3,1,0,... (levels in --qis order) searches that node alone.
        String only = System.getenv("ARX_ONLY_NODE");
        if (only != null) {
            String[] at = only.split(",");
            for (int i = 0; i < qis.length; i++) {
                data.getDefinition().setMinimumGeneralization(qis[i], Integer.parseInt(at[i]));
                data.getDefinition().setMaximumGeneralization(qis[i], Integer.parseInt(at[i]));
            }
        }
        ARXAnonymizer anonymizer = new ARXAnonymizer();
        long a0 = System.nanoTime();
        ARXResult result = anonymizer.anonymize(data, config);
        long a1 = System.nanoTime();

        // Diagnostics: ARX_SHOW_NODE=3,1,0,... (levels in --qis order) prints what the search knew of that node.
        String show = System.getenv("ARX_SHOW_NODE");
        if (show != null) {
            for (ARXNode[] level : result.getLattice().getLevels()) {
                for (ARXNode n : level) {
                    StringBuilder at = new StringBuilder();
                    for (int i = 0; i < qis.length; i++) at.append(i > 0 ? "," : "").append(n.getGeneralization(qis[i]));
                    if (at.toString().equals(show)) {
                        System.err.println("node " + show + ": anonymity " + n.getAnonymity() + ", checked " + n.isChecked()
                            + ", loss " + n.getHighestScore() + " (lowest " + n.getLowestScore() + ")");
                    }
                }
            }
        }
        ARXNode opt = result.getGlobalOptimum();
        StringBuilder levels = new StringBuilder("[");
        String infoLoss = null, infoLossRelative = null;
        if (opt != null) {
            for (int i = 0; i < qis.length; i++) {
                if (i > 0) levels.append(',');
                levels.append(opt.getGeneralization(qis[i]));
            }
            InformationLoss<?> loss = opt.getHighestScore();
            infoLoss = String.valueOf(loss);
            try {
                infoLossRelative = String.format(Locale.ROOT, "%.6f",
                    loss.relativeTo(result.getLattice().getLowestScore(), result.getLattice().getHighestScore()));
            } catch (RuntimeException e) {
                infoLossRelative = null;
            }
        }
        levels.append(']');

        long checked = -1;
        String available = "null";
        ARXProcessStatistics ps = result.getProcessStatistics();
        if (ps != null) {
            checked = ps.getTransformationsChecked();
            available = String.valueOf(ps.getTransformationsAvailable());
        }
        long latticeChecked = 0, latticeSize = 0;
        for (ARXNode[] level : result.getLattice().getLevels()) {
            for (ARXNode n : level) {
                latticeSize++;
                if (n.isChecked()) latticeChecked++;
            }
        }

        long p0 = System.nanoTime();
        int suppressed = -1;
        String release = "null";
        if (opt != null) {
            DataHandle output = result.getOutput(false);
            suppressed = 0;
            DataHandle counted = subset != null ? output.getView() : output;
            for (int r = 0; r < counted.getNumRows(); r++) if (counted.isOutlier(r)) suppressed++;
            release = measures(input, output, qis, sensitive, specs, emdHierarchies, data);
            if (out != null) output.save(new File(out), ';');
        }
        long p1 = System.nanoTime();

        StringBuilder crit = new StringBuilder("[");
        for (int i = 0; i < criteria.size(); i++) {
            if (i > 0) crit.append(',');
            crit.append(json(criteria.get(i).toString()));
        }
        crit.append(']');

        StringBuilder sb = new StringBuilder("{");
        if (label != null) sb.append("\"label\":").append(json(label)).append(',');
        sb.append("\"rows\":").append(rows)
          .append(",\"k\":").append(k)
          .append(",\"budget\":").append(budget)
          .append(",\"metric\":\"").append(metricName).append('"')
          .append(",\"qis\":").append(json(String.join("|", qis)))
          .append(",\"criteria\":").append(crit)
          .append(",\"optimum_found\":").append(result.getOptimumFound())
          .append(",\"levels\":").append(levels)
          .append(",\"suppressed\":").append(suppressed)
          .append(",\"info_loss\":").append(infoLoss == null ? "null" : json(infoLoss))
          .append(",\"info_loss_relative\":").append(infoLossRelative == null ? "null" : infoLossRelative)
          .append(",\"release\":").append(release)
          .append(",\"nodes_checked\":").append(checked)
          .append(",\"lattice_nodes_checked\":").append(latticeChecked)
          .append(",\"lattice_size\":").append(latticeSize)
          .append(",\"transformations_available\":").append(available)
          .append(",\"load_ms\":").append(String.format(Locale.ROOT, "%.1f", (t1 - t0) / 1e6))
          .append(",\"anonymize_ms\":").append(String.format(Locale.ROOT, "%.1f", (a1 - a0) / 1e6))
          .append(",\"post_ms\":").append(String.format(Locale.ROOT, "%.1f", (p1 - p0) / 1e6))
          .append(",\"arx_time_ms\":").append(result.getTime())
          .append('}');
        System.out.println(sb);
    }

    /**
     * The release's classes (non-suppressed rows grouped by their generalized QI values) and, per
     * sensitive column, the worst class: fewest distinct values, smallest exp(entropy) (the entropy l),
     * largest r1 / (r_l + ... + r_m) for each recursive l asked (the release is recursive (c,l)-diverse
     * iff that is < c), largest EMD for each distance asked (against the whole input's distribution, as
     * ARX computes it).
     */
    static String measures(DataHandle input, DataHandle output, String[] qis, Set<String> sensitive,
                           List<Spec> specs, Map<String, String[][]> emdHierarchies, Data data) throws Exception {
        int[] qiIdx = new int[qis.length];
        for (int i = 0; i < qis.length; i++) qiIdx[i] = output.getColumnIndexOf(qis[i]);
        Map<String, Integer> sizes = new HashMap<>();
        Map<String, Map<String, Map<String, Integer>>> hist = new LinkedHashMap<>(); // column -> class -> value -> n
        for (String s : sensitive) hist.put(s, new HashMap<>());
        for (int r = 0; r < output.getNumRows(); r++) {
            if (output.isOutlier(r)) continue;
            StringBuilder key = new StringBuilder();
            for (int i : qiIdx) key.append(output.getValue(r, i)).append('\u0001');
            String cls = key.toString();
            sizes.merge(cls, 1, Integer::sum);
            for (String s : sensitive) {
                String v = output.getValue(r, output.getColumnIndexOf(s));
                hist.get(s).computeIfAbsent(cls, x -> new HashMap<>()).merge(v, 1, Integer::sum);
            }
        }
        int minClass = Integer.MAX_VALUE;
        for (int n : sizes.values()) minClass = Math.min(minClass, n);
        StringBuilder sb = new StringBuilder("{\"classes\":").append(sizes.size())
            .append(",\"min_class\":").append(sizes.isEmpty() ? "null" : String.valueOf(minClass))
            .append(",\"sensitive\":{");
        boolean firstCol = true;
        for (String s : sensitive) {
            // The whole input's distribution.
            Map<String, Integer> overall = new HashMap<>();
            int col = input.getColumnIndexOf(s);
            for (int r = 0; r < input.getNumRows(); r++) overall.merge(input.getValue(r, col), 1, Integer::sum);
            double total = input.getNumRows();
            List<String> domain = new ArrayList<>(overall.keySet());
            int minDistinct = Integer.MAX_VALUE;
            double minEntropyL = Double.MAX_VALUE;
            Map<Integer, Double> recursive = new LinkedHashMap<>();
            double tEqual = 0, tOrdered = 0, tHier = 0;
            boolean wantOrdered = false, wantHier = false;
            for (Spec sp : specs) {
                if (!sp.column.equals(s)) continue;
                if (sp.kind.equals("l-recursive")) recursive.put((int) sp.b, 0d);
                if (sp.kind.equals("t-ordered")) wantOrdered = true;
                if (sp.kind.equals("t-hier")) wantHier = true;
            }
            List<String> order = null;
            if (wantOrdered) {
                DataType<?> dt = data.getDefinition().getDataType(s);
                order = new ArrayList<>(domain);
                order.sort((x, y) -> {
                    try { return dt.compare(x, y); } catch (Exception e) { throw new RuntimeException(e); }
                });
            }
            String[][] h = emdHierarchies.get(s);
            for (Map<String, Integer> c : hist.get(s).values()) {
                int n = 0;
                for (int f : c.values()) n += f;
                minDistinct = Math.min(minDistinct, c.size());
                double entropy = 0;
                for (int f : c.values()) { double p = (double) f / n; entropy -= p * Math.log(p); }
                minEntropyL = Math.min(minEntropyL, Math.exp(entropy));
                List<Integer> desc = new ArrayList<>(c.values());
                desc.sort(Comparator.reverseOrder());
                for (Map.Entry<Integer, Double> e : recursive.entrySet()) {
                    int l = e.getKey();
                    double tail = 0;
                    for (int i = l - 1; i < desc.size(); i++) tail += desc.get(i);
                    double ratio = tail == 0 ? Double.POSITIVE_INFINITY : desc.get(0) / tail;
                    e.setValue(Math.max(e.getValue(), ratio));
                }
                double d = 0;
                for (String v : domain) d += Math.abs(overall.get(v) / total - c.getOrDefault(v, 0) / (double) n);
                tEqual = Math.max(tEqual, d / 2);
                if (order != null && order.size() > 1) {
                    double cum = 0, sum = 0;
                    for (String v : order) {
                        cum += c.getOrDefault(v, 0) / (double) n - overall.get(v) / total;
                        sum += Math.abs(cum);
                    }
                    tOrdered = Math.max(tOrdered, sum / (order.size() - 1));
                }
                if (wantHier) tHier = Math.max(tHier, hierarchicalEmd(h, overall, total, c, n));
            }
            if (!firstCol) sb.append(',');
            firstCol = false;
            boolean any = !hist.get(s).isEmpty();
            sb.append(json(s)).append(":{\"domain\":").append(domain.size())
              .append(",\"min_distinct\":").append(any ? String.valueOf(minDistinct) : "null")
              .append(",\"min_entropy_l\":").append(any ? num(minEntropyL) : "null")
              .append(",\"max_t_equal\":").append(any ? num(tEqual) : "null");
            if (wantOrdered) sb.append(",\"max_t_ordered\":").append(any ? num(tOrdered) : "null");
            if (wantHier) sb.append(",\"max_t_hierarchical\":").append(any ? num(tHier) : "null");
            for (Map.Entry<Integer, Double> e : recursive.entrySet())
                sb.append(",\"max_recursive_ratio_l").append(e.getKey()).append("\":").append(any ? num(e.getValue()) : "null");
            sb.append('}');
        }
        return sb.append("}}").toString();
    }

    /**
     * Hierarchical EMD (Li, Li, Venkatasubramanian 2007) between the class (q) and the input (p):
     * sum over inner nodes N of level(N)/height * min(positive extra, negative extra) of N's children,
     * where a leaf's extra is p - q and an inner node's is the sum of its children's. Nodes are
     * (level, label); the hierarchy's rows are leaf;level1;...;top.
     */
    static double hierarchicalEmd(String[][] h, Map<String, Integer> overall, double total,
                                  Map<String, Integer> cls, int n) {
        int height = h[0].length - 1;
        if (height < 1) return 0;
        // extra of each node at the current level, keyed by label
        Map<String, Double> extra = new HashMap<>();
        Set<String> leaves = new LinkedHashSet<>();
        for (String[] row : h) leaves.add(row[0]);
        for (String v : leaves)
            extra.put(v, overall.getOrDefault(v, 0) / total - cls.getOrDefault(v, 0) / (double) n);
        double cost = 0;
        for (int level = 1; level <= height; level++) {
            Map<String, double[]> posNeg = new LinkedHashMap<>();
            Map<String, String> parentOf = new LinkedHashMap<>();
            for (String[] row : h) parentOf.putIfAbsent(row[level - 1], row[level]);
            for (Map.Entry<String, String> e : parentOf.entrySet()) {
                double x = extra.getOrDefault(e.getKey(), 0d);
                double[] pn = posNeg.computeIfAbsent(e.getValue(), y -> new double[2]);
                if (x > 0) pn[0] += x; else pn[1] -= x;
            }
            Map<String, Double> next = new HashMap<>();
            for (Map.Entry<String, double[]> e : posNeg.entrySet()) {
                double[] pn = e.getValue();
                cost += ((double) level / height) * Math.min(pn[0], pn[1]);
                next.put(e.getKey(), pn[0] - pn[1]);
            }
            extra = next;
        }
        return cost;
    }

    static String[] parts(String opt, String v, int min, int max) {
        String[] p = v.split(":", max);
        if (p.length < min) throw new IllegalArgumentException(opt + " " + v + ": expected " + min + " ':'-separated parts");
        return p;
    }

    static String num(double d) {
        if (Double.isInfinite(d) || Double.isNaN(d)) return "null";
        return String.format(Locale.ROOT, "%.6f", d);
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }

    static void usage() {
        System.out.println(String.join("\n",
            "arx-models --data FILE [--hier DIR] [--qis a,b,c] [--k N] [--budget F] [--metric loss|precision|dm]",
            "           [--out FILE] [--label NAME] [--type COL:integer|decimal|string]",
            "           [--t-equal COL:T] [--t-ordered COL:T] [--t-hier COL:T[:FILE]]",
            "           [--l-distinct COL:L] [--l-entropy COL:L] [--l-recursive COL:C:L]   (repeatable)",
            "Prints one JSON line: levels (in --qis order), suppressed, info_loss, info_loss_relative,",
            "release (classes, min_class, per sensitive column the worst class's measures), nodes_checked,",
            "load_ms, anonymize_ms, post_ms, arx_time_ms."));
    }
}
