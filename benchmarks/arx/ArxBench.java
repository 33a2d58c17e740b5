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
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.metric.InformationLoss;

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
 *   load=1             read the data and its hierarchies from their files in this run (timed apart:
 *                      load_ms), not from the copy kept since the first run
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
            System.out.println(ArxSetup.json(last));
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
            out.println(ArxSetup.json(r));
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

    /** One timed anonymization; describes the chosen node. */
    private static Map<String, Object> run(Map<String, String> c, String outliers) throws IOException {
        // load=1: the data and its hierarchies read from their files for this run, timed apart
        // (load_ms), as a job that starts from its data at rest reads them
        long l0 = System.nanoTime();
        Data data = c.containsKey("load") ? ArxSetup.data(c) : data(c);
        long l1 = System.nanoTime();
        ARXConfiguration config = ArxSetup.config(c, data);
        ARXAnonymizer anonymizer = new ARXAnonymizer();
        long t0 = System.nanoTime();
        ARXResult result = anonymizer.anonymize(data, config);
        long t1 = System.nanoTime();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("ms", (t1 - t0) / 1e6);
        if (c.containsKey("load")) r.put("load_ms", (l1 - l0) / 1e6);
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
        ARXConfiguration config = ArxSetup.config(c, data);
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        ARXNode n = ArxSetup.nodeAt(result, c.get("levels"));
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
        int suppressed = ArxSetup.suppressed(out, outliers);
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
}
