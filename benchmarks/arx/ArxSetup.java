import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXConfiguration.AnonymizationAlgorithm;
import org.deidentifier.arx.ARXLattice;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.DataSubset;
import org.deidentifier.arx.criteria.BasicBLikeness;
import org.deidentifier.arx.criteria.DPresence;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.EnhancedBLikeness;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.KMap;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.criteria.RecursiveCLDiversity;
import org.deidentifier.arx.metric.Metric;

/**
 * The setup the ARX harnesses share (ArxBench, ArxClassify, ArxVerdicts, ArxPopVerdicts): key=value
 * tokens, the data with its attribute types and hierarchies, a research subset / sample as row
 * indices, ARX's population-based criteria (DPresence, KMap) built from tokens, the configuration
 * from tokens, a lattice node by its levels, the suppressed records of an output, and JSON.
 * Compile it with them: {@code javac -cp $CP -d OUT ArxSetup.java ArxBench.java}.
 */
final class ArxSetup {

    private ArxSetup() {
    }

    /** key=value tokens, in order. */
    static Map<String, String> parse(String[] tokens) {
        Map<String, String> c = new LinkedHashMap<>();
        for (String t : tokens) {
            int i = t.indexOf('=');
            if (i < 0) throw new IllegalArgumentException("expected key=value, got " + t);
            c.put(t.substring(0, i), t.substring(i + 1));
        }
        return c;
    }

    /** hier.ATTR=PATH, else <dir>/<stem>_hierarchy_<attr>.csv next to data=PATH. */
    static String hierarchyPath(Map<String, String> c, String attr) {
        if (c.containsKey("hier." + attr)) return c.get("hier." + attr);
        File f = new File(c.get("data"));
        String stem = f.getName().replaceAll("\\.csv$", "");
        return new File(f.getAbsoluteFile().getParentFile(), stem + "_hierarchy_" + attr + ".csv").getPath();
    }

    /** The data (';'-separated CSV) with QIDs (their hierarchies), the sensitive attribute, all else insensitive. */
    static Data data(Map<String, String> c) throws IOException {
        Data data = Data.create(c.get("data"), StandardCharsets.UTF_8, ';');
        List<String> qids = Arrays.asList(c.get("qids").split(","));
        String sensitive = c.get("sensitive");
        DataHandle h = data.getHandle();
        for (int i = 0; i < h.getNumColumns(); i++) {
            String col = h.getAttributeName(i);
            if (qids.contains(col)) {
                data.getDefinition().setAttributeType(col, Hierarchy.create(hierarchyPath(c, col), StandardCharsets.UTF_8, ';'));
            } else if (col.equals(sensitive)) {
                data.getDefinition().setAttributeType(col, AttributeType.SENSITIVE_ATTRIBUTE);
            } else {
                data.getDefinition().setAttributeType(col, AttributeType.INSENSITIVE_ATTRIBUTE);
            }
        }
        for (String q : qids) {
            if (h.getColumnIndexOf(q) < 0) throw new IllegalArgumentException("no column " + q);
        }
        h.release();
        return data;
    }

    /** The rows of subset=PATH: one 0-based row index of the data per line. */
    static Set<Integer> rows(Map<String, String> c) throws IOException {
        if (!c.containsKey("subset")) throw new IllegalArgumentException("this criterion needs subset=PATH");
        Set<Integer> out = new HashSet<>();
        for (String line : Files.readAllLines(Paths.get(c.get("subset")), StandardCharsets.UTF_8)) {
            if (!line.isBlank()) out.add(Integer.parseInt(line.trim()));
        }
        return out;
    }

    static int integer(Map<String, String> c, String key) {
        if (!c.containsKey(key)) throw new IllegalArgumentException("missing " + key + "=...");
        return Integer.parseInt(c.get(key));
    }

    static double real(Map<String, String> c, String key) {
        if (!c.containsKey(key)) throw new IllegalArgumentException("missing " + key + "=...");
        return Double.parseDouble(c.get(key));
    }

    /** delta-presence: the data is the population, subset=PATH the research subset (dmin=, dmax=). */
    static DPresence dPresence(Map<String, String> c, Data data) throws IOException {
        return new DPresence(real(c, "dmin"), real(c, "dmax"), DataSubset.create(data, rows(c)));
    }

    /**
     * k-map with the given k: with estimator=poisson|zero-truncated-poisson population_size=N significance=A
     * ARX's cell size estimator on the data as the sample; else the data is the population and
     * subset=PATH the sample.
     */
    static KMap kMap(Map<String, String> c, Data data, int k) throws IOException {
        if (!c.containsKey("estimator")) return new KMap(k, DataSubset.create(data, rows(c)));
        String e = c.get("estimator");
        KMap.CellSizeEstimator estimator;
        if (e.equals("poisson")) {
            estimator = KMap.CellSizeEstimator.POISSON;
        } else if (e.equals("zero-truncated-poisson")) {
            estimator = KMap.CellSizeEstimator.ZERO_TRUNCATED_POISSON;
        } else {
            throw new IllegalArgumentException("estimator must be poisson or zero-truncated-poisson");
        }
        return new KMap(k, real(c, "significance"), ARXPopulationModel.create(Long.parseLong(c.get("population_size"))), estimator);
    }

    /**
     * ARX's configuration from tokens: the quality model (metric=, default loss), the privacy
     * models (k, t, ldiv, beta, dmin/dmax, kmap), the suppression limit and the search (algo=,
     * threshold=, ga.*). See ArxBench's header for the tokens.
     */
    static ARXConfiguration config(Map<String, String> c, Data data) throws IOException {
        ARXConfiguration config = ARXConfiguration.create();
        String metric = c.getOrDefault("metric", "loss");
        switch (metric) {
            case "loss": config.setQualityModel(Metric.createLossMetric()); break;  // MetricMDNMLoss, gs 0.5
            case "nu-entropy": config.setQualityModel(Metric.createEntropyMetric(true)); break;  // MetricMDNUEntropy
            case "aecs": config.setQualityModel(Metric.createAECSMetric()); break;  // MetricSDAECS, gs 0.5
            case "discernibility": config.setQualityModel(Metric.createDiscernabilityMetric()); break;  // MetricSDNMDiscernability
            case "precision": config.setQualityModel(Metric.createPrecisionMetric(true)); break;  // MetricMDPrecision
            case "height": config.setQualityModel(Metric.createHeightMetric()); break;  // MetricMDHeight
            default: throw new IllegalArgumentException("metric must be loss, nu-entropy, aecs, discernibility, precision or height");
        }
        if (c.containsKey("k")) config.addPrivacyModel(new KAnonymity(Integer.parseInt(c.get("k"))));
        if (c.containsKey("t")) {
            double t = Double.parseDouble(c.get("t"));
            String sa = c.get("sensitive");
            String tm = c.getOrDefault("tmodel", "equal");
            if (tm.equals("equal")) {
                config.addPrivacyModel(new EqualDistanceTCloseness(sa, t));
            } else if (tm.equals("ordered")) {
                config.addPrivacyModel(new OrderedDistanceTCloseness(sa, t));
            } else if (tm.equals("hierarchical")) {
                Hierarchy h = Hierarchy.create(hierarchyPath(c, sa), StandardCharsets.UTF_8, ';');
                config.addPrivacyModel(new HierarchicalDistanceTCloseness(sa, t, h));
            } else {
                throw new IllegalArgumentException("tmodel must be equal, ordered or hierarchical");
            }
        }
        if (c.containsKey("ldiv")) {
            String sa = c.get("sensitive");
            String lm = c.get("ldiv");
            if (lm.equals("distinct")) {
                config.addPrivacyModel(new DistinctLDiversity(sa, Integer.parseInt(c.get("l"))));
            } else if (lm.equals("entropy")) {
                config.addPrivacyModel(new EntropyLDiversity(sa, Double.parseDouble(c.get("l"))));
            } else if (lm.equals("recursive")) {
                config.addPrivacyModel(new RecursiveCLDiversity(sa, Double.parseDouble(c.get("c")), Integer.parseInt(c.get("l"))));
            } else {
                throw new IllegalArgumentException("ldiv must be distinct, entropy or recursive");
            }
        }
        if (c.containsKey("beta")) {
            String sa = c.get("sensitive");
            double beta = Double.parseDouble(c.get("beta"));
            if (c.getOrDefault("bmodel", "enhanced").equals("enhanced")) {
                config.addPrivacyModel(new EnhancedBLikeness(sa, beta));
            } else {
                config.addPrivacyModel(new BasicBLikeness(sa, beta));
            }
        }
        // The population-based models: the data is the population (delta-presence, k-map with a
        // subset), or the sample (k-map with an estimator).
        if (c.containsKey("dmin") || c.containsKey("dmax")) config.addPrivacyModel(dPresence(c, data));
        if (c.containsKey("kmap")) config.addPrivacyModel(kMap(c, data, integer(c, "kmap")));
        if (c.containsKey("threshold")) config.setHeuristicSearchThreshold(Integer.parseInt(c.get("threshold")));
        config.setSuppressionLimit(Double.parseDouble(c.getOrDefault("supp", "1.0")));
        String algo = c.getOrDefault("algo", "optimal");
        if (algo.equals("optimal")) {
            config.setAlgorithm(AnonymizationAlgorithm.OPTIMAL);
        } else if (algo.equals("genetic")) {
            config.setAlgorithm(AnonymizationAlgorithm.BEST_EFFORT_GENETIC);
            config.setGeneticAlgorithmDeterministic(Boolean.parseBoolean(c.getOrDefault("ga.deterministic", "true")));
            if (c.containsKey("ga.iterations")) config.setGeneticAlgorithmIterations(Integer.parseInt(c.get("ga.iterations")));
            if (c.containsKey("ga.timelimit_ms")) config.setHeuristicSearchTimeLimit(Integer.parseInt(c.get("ga.timelimit_ms")));
        } else {
            throw new IllegalArgumentException("algo must be optimal or genetic");
        }
        return config;
    }

    /** The node of ARX's lattice at levels=a:1,b:0,... (one level per QID), or null. */
    static ARXNode nodeAt(ARXResult result, String levels) {
        Map<String, Integer> want = new HashMap<>();
        for (String kv : levels.split(",")) {
            String[] p = kv.split(":");
            want.put(p[0], Integer.parseInt(p[1]));
        }
        ARXLattice lattice = result.getLattice();
        String[] qis = lattice.getBottom().getQuasiIdentifyingAttributes();
        int[] tr = new int[qis.length];
        for (int i = 0; i < qis.length; i++) tr[i] = want.get(qis[i]);
        return lattice.getNode(tr);
    }

    /** The records ARX suppressed in {@code out}; outliers=PATH (or null) gets one line per input
     *  record, in input order: 1 = suppressed, 0 = released. */
    static int suppressed(DataHandle out, String outliers) throws IOException {
        int suppressed = 0;
        PrintWriter w = outliers == null ? null : new PrintWriter(outliers, "UTF-8");
        for (int i = 0; i < out.getNumRows(); i++) {
            boolean o = out.isOutlier(i);
            if (o) suppressed++;
            if (w != null) w.println(o ? '1' : '0');
        }
        if (w != null) w.close();
        return suppressed;
    }

    /** A JSON text of null, strings, numbers, booleans, int arrays, maps and lists. */
    static String json(Object o) {
        if (o == null) return "null";
        if (o instanceof String) return "\"" + ((String) o).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        if (o instanceof Boolean || o instanceof Integer || o instanceof Long) return o.toString();
        if (o instanceof int[]) return Arrays.toString((int[]) o);
        if (o instanceof Double) {
            double d = (Double) o;
            return Double.isFinite(d) ? String.valueOf(d) : "null";
        }
        if (o instanceof Map) {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (b.length() > 1) b.append(", ");
                b.append(json(e.getKey().toString())).append(": ").append(json(e.getValue()));
            }
            return b.append('}').toString();
        }
        if (o instanceof List) {
            StringBuilder b = new StringBuilder("[");
            for (Object x : (List<?>) o) {
                if (b.length() > 1) b.append(", ");
                b.append(json(x));
            }
            return b.append(']').toString();
        }
        return json(o.toString());
    }
}
