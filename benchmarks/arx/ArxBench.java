import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXConfiguration.AnonymizationAlgorithm;
import org.deidentifier.arx.ARXLattice;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.BasicBLikeness;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.EnhancedBLikeness;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.RecursiveCLDiversity;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.metric.InformationLoss;
import org.deidentifier.arx.metric.Metric;

/**
 * Timing harness for ARX (arx-deidentifier) on ARX-format CSV data with ARX hierarchies.
 *
 * A case is a list of key=value tokens:
 *   data=PATH          ';'-separated CSV with header; hierarchies are looked up as
 *                      <dir>/<stem>_hierarchy_<attr>.csv (stem = file name without .csv)
 *   hier.ATTR=PATH     explicit hierarchy file for one attribute (overrides the lookup)
 *   qids=a,b,c         quasi-identifiers (all other columns are INSENSITIVE)
 *   sensitive=col      sensitive attribute (needed for t-closeness)
 *   k=5                k-anonymity
 *   t=0.2              t-closeness on the sensitive attribute
 *   tmodel=equal|ordered|hierarchical   ARX's EMD variant (default equal)
 *   ldiv=distinct|entropy|recursive l=L [c=C]   l-diversity of the sensitive attribute
 *                      (ppdp's copy, benchmarks/arx: added for issue #25's per-model cases)
 *   beta=B [bmodel=basic|enhanced]       beta-likeness of the sensitive attribute (default enhanced)
 *   dmin=X dmax=Y subset=PATH            delta-presence (ARX DPresence): the data is the population,
 *                      subset=PATH its research subset (one 0-based row index per line)
 *   kmap=K [subset=PATH | estimator=poisson|zero-truncated-poisson population_size=N significance=A]
 *                      k-map (ARX KMap): against the population (the data; subset=PATH the sample) or
 *                      with ARX's cell size estimator (the data is the sample)
 *   threshold=N        ARX's heuristic search threshold (default 100,000 nodes): algo=optimal on a
 *                      larger lattice needs threshold >= its size, or ARX refuses to run
 *   supp=1.0           suppression limit (fraction of records)
 *   algo=optimal|genetic  (optimal = ARX's default globally-optimal search, Flash)
 *   ga.iterations=N ga.deterministic=true|false   genetic-algorithm options
 *   metric=loss        the quality model: loss (createLossMetric(), the default), nu-entropy
 *                      (createEntropyMetric(true)), aecs, discernibility, precision
 *                      (createPrecisionMetric(true)) or height
 *
 * Modes:
 *   java ArxBench serve            one command per line on stdin, one JSON line per command on stdout:
 *       run TOKENS [outliers=PATH]         one timed anonymization (wall time of anonymize())
 *       node TOKENS levels=a:1,b:0,... [outliers=PATH]
 *                                          ARX's view of a given node under the same configuration
 *                                          (anonymize untimed, then result.getOutput(node))
 *       quit
 *   java ArxBench bench TOKENS [warmup=3] [reps=7] [outliers=PATH]
 *                                          standalone: warm-ups, then reps timed runs; JSON on stdout
 * outliers=PATH writes one line per input record (input order): 1 = suppressed by ARX, 0 = released.
 */
public class ArxBench {

    private static final Map<String, Data> DATA_CACHE = new HashMap<>();

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        if (args.length == 0 || args[0].equals("serve")) {
            serve();
        } else if (args[0].equals("bench")) {
            Map<String, String> c = ArxSetup.parse(Arrays.copyOfRange(args, 1, args.length));
            int warmup = Integer.parseInt(c.getOrDefault("warmup", "3"));
            int reps = Integer.parseInt(c.getOrDefault("reps", "7"));
            List<Double> warm = new ArrayList<>();
            List<Double> times = new ArrayList<>();
            Map<String, Object> last = null;
            for (int i = 0; i < warmup + reps; i++) {
                boolean lastRun = i == warmup + reps - 1;
                Map<String, Object> r = run(c, lastRun ? c.get("outliers") : null);
                (i < warmup ? warm : times).add((Double) r.get("ms"));
                last = r;
            }
            List<Double> sorted = new ArrayList<>(times);
            sorted.sort(null);
            last.put("warmup_ms", warm);
            last.put("times_ms", times);
            last.put("median_ms", sorted.get(sorted.size() / 2));
            System.out.println(json(last));
        } else {
            System.err.println("usage: ArxBench serve | ArxBench bench key=value ...");
            System.exit(2);
        }
    }

    private static void serve() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, true);
        out.println("{\"ready\": true, \"java\": \"" + System.getProperty("java.version") + "\"}");
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) continue;
            if (line.equals("quit")) break;
            String[] parts = line.split("\\s+");
            Map<String, Object> r;
            try {
                Map<String, String> c = ArxSetup.parse(Arrays.copyOfRange(parts, 1, parts.length));
                if (parts[0].equals("run")) {
                    r = run(c, c.get("outliers"));
                } else if (parts[0].equals("node")) {
                    r = node(c);
                } else {
                    throw new IllegalArgumentException("unknown command " + parts[0]);
                }
            } catch (Throwable e) {
                r = new LinkedHashMap<>();
                r.put("error", e.toString());
            }
            out.println(json(r));
        }
    }

    /** Data with its definition, cached per (data, qids, sensitive, hierarchy overrides). */
    private static Data data(Map<String, String> c) throws IOException {
        StringBuilder key = new StringBuilder();
        for (Map.Entry<String, String> e : c.entrySet()) {
            if (e.getKey().equals("data") || e.getKey().equals("qids") || e.getKey().equals("sensitive") || e.getKey().startsWith("hier.")) {
                key.append(e.getKey()).append('=').append(e.getValue()).append(' ');
            }
        }
        Data data = DATA_CACHE.get(key.toString());
        if (data == null) {
            data = ArxSetup.data(c);
            DATA_CACHE.put(key.toString(), data);
        }
        data.getHandle().release();
        return data;
    }

    private static ARXConfiguration config(Map<String, String> c, Data data) throws IOException {
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
                Hierarchy h = Hierarchy.create(ArxSetup.hierarchyPath(c, sa), StandardCharsets.UTF_8, ';');
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
        if (c.containsKey("dmin") || c.containsKey("dmax")) config.addPrivacyModel(ArxSetup.dPresence(c, data));
        if (c.containsKey("kmap")) config.addPrivacyModel(ArxSetup.kMap(c, data, ArxSetup.integer(c, "kmap")));
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

    /** One timed anonymization; describes the chosen node. */
    private static Map<String, Object> run(Map<String, String> c, String outliers) throws IOException {
        Data data = data(c);
        ARXConfiguration config = config(c, data);
        ARXAnonymizer anonymizer = new ARXAnonymizer();
        long t0 = System.nanoTime();
        ARXResult result = anonymizer.anonymize(data, config);
        long t1 = System.nanoTime();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("ms", (t1 - t0) / 1e6);
        r.put("arx_reported_ms", (double) result.getTime());
        ARXNode opt = result.getGlobalOptimum();
        if (opt == null) {
            r.put("found", false);
            return r;
        }
        r.put("found", true);
        describe(r, c, result, opt, outliers);
        r.put("lattice_nodes_materialized", result.getLattice().getSize());
        if (result.getProcessStatistics() != null) {
            r.put("transformations_available", result.getProcessStatistics().getTransformationsAvailable().toString());
            r.put("transformations_checked", result.getProcessStatistics().getTransformationsChecked());
        }
        return r;
    }

    /** ARX's view of a given node: anonymous under its suppression limit?, Loss, suppressed records. */
    private static Map<String, Object> node(Map<String, String> c) throws IOException {
        Data data = data(c);
        ARXConfiguration config = config(c, data);
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        Map<String, Integer> want = new HashMap<>();
        for (String kv : c.get("levels").split(",")) {
            String[] p = kv.split(":");
            want.put(p[0], Integer.parseInt(p[1]));
        }
        ARXLattice lattice = result.getLattice();
        String[] qis = lattice.getBottom().getQuasiIdentifyingAttributes();
        int[] tr = new int[qis.length];
        for (int i = 0; i < qis.length; i++) tr[i] = want.get(qis[i]);
        ARXNode n = lattice.getNode(tr);
        Map<String, Object> r = new LinkedHashMap<>();
        if (n == null) {
            r.put("found", false);
            return r;
        }
        r.put("found", true);
        describe(r, c, result, n, c.get("outliers"));
        return r;
    }

    private static void describe(Map<String, Object> r, Map<String, String> c, ARXResult result, ARXNode node, String outliers) throws IOException {
        List<String> qids = Arrays.asList(c.get("qids").split(","));
        Map<String, Object> levels = new LinkedHashMap<>();
        for (String q : qids) levels.put(q, node.getGeneralization(q));
        DataHandle out = result.getOutput(node, false);
        int n = out.getNumRows();
        int suppressed = 0;
        PrintWriter w = outliers == null ? null : new PrintWriter(outliers, "UTF-8");
        for (int i = 0; i < n; i++) {
            boolean o = out.isOutlier(i);
            if (o) suppressed++;
            if (w != null) w.println(o ? '1' : '0');
        }
        if (w != null) w.close();
        r.put("levels", levels);
        r.put("records", n);
        r.put("suppressed", suppressed);
        r.put("anonymous", node.getAnonymity().toString());
        InformationLoss<?> hi = node.getHighestScore();
        InformationLoss<?> lo = node.getLowestScore();
        r.put("loss", hi == null ? null : hi.toString());
        r.put("loss_value", hi == null ? null : String.valueOf(hi.getValue()));
        r.put("loss_exact", hi != null && lo != null && hi.compareTo(lo) == 0);
        out.release();
    }

    private static String json(Object o) {
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
