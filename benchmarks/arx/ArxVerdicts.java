import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXConfiguration.AnonymizationAlgorithm;
import org.deidentifier.arx.ARXConfiguration.ARXConfigurationInternal;
import org.deidentifier.arx.ARXLattice;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXLattice.Anonymity;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.DataSubset;
import org.deidentifier.arx.criteria.BasicBLikeness;
import org.deidentifier.arx.criteria.DPresence;
import org.deidentifier.arx.criteria.KMap;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.EnhancedBLikeness;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.ExplicitPrivacyCriterion;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.criteria.PrivacyCriterion;
import org.deidentifier.arx.criteria.RecursiveCLDiversity;
import org.deidentifier.arx.framework.check.TransformationApplicator;
import org.deidentifier.arx.framework.data.DataManager;
import org.deidentifier.arx.framework.data.DataMatrix;
import org.deidentifier.arx.framework.lattice.SolutionSpace;
import org.deidentifier.arx.metric.Metric;

/**
 * ARX's verdict per lattice node with no suppression: does every equivalence class of the node
 * satisfy the privacy criteria? (ARX's "anonymous" at a suppression limit of 0.)
 *
 *   java -cp "$CP:benchmarks/arx/build" ArxVerdicts data=PATH qids=a,b,c [sensitive=col]
 *        [hier.ATTR=PATH] criteria=NAME[+NAME...] PARAMS... nodes=PATH
 *
 * nodes=PATH: one node per line, its generalization levels in the order of qids, comma-separated.
 * Output: one JSON line {"criteria", "nodes", "verdicts" ("1" anonymous / "0" not, in the order
 * of the file), "decided_by_search", "search_conflicts", "ms"}.
 *
 * The criteria are table-driven (CRITERIA below): adding ARX's criterion NAME is one entry that
 * builds it from the tokens (and, if it needs them, the data: a research subset, a population).
 * Hierarchies of QIDs (and of the sensitive attribute for hierarchical t-closeness) are read from
 * <dir>/<stem>_hierarchy_<attr>.csv unless hier.ATTR=PATH names one. Every attribute is ARX's
 * default data type (string), so ordered distance orders values as Java's String.compareTo does.
 *
 * How the verdict is taken: ARX's optimal search runs once at a suppression limit of 0; a node it
 * decided (checked or tagged) is counted, and every node is checked by ARX's
 * TransformationApplicator as ARXResult.getOutput(node) does (see Checker), so every verdict
 * printed is ARX's own check of that node, never a prediction by monotonicity;
 * "search_conflicts" counts nodes where the search's state disagrees with that check (0 expected).
 */
public class ArxVerdicts {

    /** Builds an ARX criterion from the tokens (and the data, for criteria that need it). */
    interface Factory {
        PrivacyCriterion make(Map<String, String> c, Data data) throws IOException;
    }

    /** name -> ARX criterion; one entry per criterion (the only place a criterion is named). */
    static final Map<String, Factory> CRITERIA = new LinkedHashMap<>();
    static {
        CRITERIA.put("k-anonymity", (c, d) -> new KAnonymity(integer(c, "k")));
        CRITERIA.put("distinct-l-diversity", (c, d) -> new DistinctLDiversity(sa(c), integer(c, "l")));
        CRITERIA.put("entropy-l-diversity", (c, d) -> new EntropyLDiversity(sa(c), real(c, "l")));
        CRITERIA.put("t-closeness-equal", (c, d) -> new EqualDistanceTCloseness(sa(c), real(c, "t")));
        CRITERIA.put("t-closeness-ordered", (c, d) -> new OrderedDistanceTCloseness(sa(c), real(c, "t")));
        CRITERIA.put("t-closeness-hierarchical", (c, d) -> new HierarchicalDistanceTCloseness(sa(c), real(c, "t"),
                Hierarchy.create(hierarchyPath(c, sa(c)), StandardCharsets.UTF_8, ';')));
        CRITERIA.put("recursive-cl-diversity", (c, d) -> new RecursiveCLDiversity(sa(c), real(c, "c"), integer(c, "l")));
        CRITERIA.put("basic-beta-likeness", (c, d) -> new BasicBLikeness(sa(c), real(c, "beta")));
        CRITERIA.put("enhanced-beta-likeness", (c, d) -> new EnhancedBLikeness(sa(c), real(c, "beta")));
        // The data is the population; subset=PATH lists the research subset's (sample's) rows.
        CRITERIA.put("d-presence", (c, d) -> new DPresence(real(c, "dmin"), real(c, "dmax"), DataSubset.create(d, rows(c))));
        CRITERIA.put("k-map", (c, d) -> new KMap(integer(c, "k"), DataSubset.create(d, rows(c))));
        CRITERIA.put("k-map-poisson", (c, d) -> new KMap(integer(c, "k"), real(c, "significance"),
                ARXPopulationModel.create(Long.parseLong(c.get("population_size"))), KMap.CellSizeEstimator.POISSON));
        CRITERIA.put("k-map-zero-truncated-poisson", (c, d) -> new KMap(integer(c, "k"), real(c, "significance"),
                ARXPopulationModel.create(Long.parseLong(c.get("population_size"))), KMap.CellSizeEstimator.ZERO_TRUNCATED_POISSON));
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

    static String sa(Map<String, String> c) {
        String s = c.get("sensitive");
        if (s == null) throw new IllegalArgumentException("this criterion needs sensitive=COLUMN");
        return s;
    }

    static int integer(Map<String, String> c, String key) {
        if (!c.containsKey(key)) throw new IllegalArgumentException("missing " + key + "=...");
        return Integer.parseInt(c.get(key));
    }

    static double real(Map<String, String> c, String key) {
        if (!c.containsKey(key)) throw new IllegalArgumentException("missing " + key + "=...");
        return Double.parseDouble(c.get(key));
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        Map<String, String> c = new LinkedHashMap<>();
        for (String t : args) {
            int i = t.indexOf('=');
            if (i < 0) throw new IllegalArgumentException("expected key=value, got " + t);
            c.put(t.substring(0, i), t.substring(i + 1));
        }
        List<int[]> nodes = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(Paths.get(c.get("nodes")), StandardCharsets.UTF_8)) {
            String line;
            while ((line = r.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty()) continue;
                nodes.add(Arrays.stream(line.split(",")).mapToInt(Integer::parseInt).toArray());
            }
        }
        long t0 = System.nanoTime();
        Data data = data(c);
        ARXConfiguration config = ARXConfiguration.create();
        config.setQualityModel(Metric.createLossMetric());
        for (String name : c.get("criteria").split("\\+")) {
            Factory f = CRITERIA.get(name);
            if (f == null) throw new IllegalArgumentException("unknown criterion " + name + "; known: " + CRITERIA.keySet());
            config.addPrivacyModel(f.make(c, data));
        }
        // A sensitive column no criterion reads is insensitive (ARX refuses an unprotected one).
        String sensitive = c.get("sensitive");
        if (sensitive != null && config.getPrivacyModels().stream().noneMatch(
                m -> m instanceof ExplicitPrivacyCriterion && ((ExplicitPrivacyCriterion) m).getAttribute().equals(sensitive))) {
            data.getDefinition().setAttributeType(sensitive, AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        config.setSuppressionLimit(0d);
        config.setAlgorithm(AnonymizationAlgorithm.OPTIMAL);
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        ARXLattice lattice = result.getLattice();
        String[] arxQis = lattice.getBottom().getQuasiIdentifyingAttributes();
        List<String> qids = Arrays.asList(c.get("qids").split(","));
        Checker checker = new Checker(result);
        StringBuilder verdicts = new StringBuilder();
        int bySearch = 0;
        int conflicts = 0;
        for (int[] levels : nodes) {
            if (levels.length != qids.size()) throw new IllegalArgumentException("node " + Arrays.toString(levels) + " has not one level per qid");
            int[] tr = new int[arxQis.length];
            for (int i = 0; i < arxQis.length; i++) tr[i] = levels[qids.indexOf(arxQis[i])];
            ARXNode n = lattice.getNode(tr);
            if (n == null) throw new IllegalStateException("ARX has no node " + Arrays.toString(levels));
            boolean ok = checker.check(n);
            Anonymity a = n.getAnonymity();  // the search's state, where it reached one: must agree
            if (a == Anonymity.ANONYMOUS || a == Anonymity.NOT_ANONYMOUS) {
                bySearch++;
                if ((a == Anonymity.ANONYMOUS) != ok) conflicts++;
            }
            verdicts.append(ok ? '1' : '0');
        }
        double ms = (System.nanoTime() - t0) / 1e6;
        System.out.println("{\"criteria\": \"" + c.get("criteria") + "\", \"nodes\": " + nodes.size() + ", \"verdicts\": \"" + verdicts
                + "\", \"decided_by_search\": " + bySearch + ", \"search_conflicts\": " + conflicts + ", \"ms\": " + ms + "}");
    }

    /**
     * ARX's own check of a node, as ARXResult.getOutput does it (a TransformationApplicator over the
     * result's data manager and buffer; the node is anonymous when privacyModelFulfilled), without
     * building an output handle and re-estimating the lattice's information loss on each call. The
     * result's private fields are read by reflection; if that fails, getOutput itself is used.
     */
    static final class Checker {
        private final ARXResult result;
        private TransformationApplicator applicator;
        private SolutionSpace<?> space;

        Checker(ARXResult result) {
            this.result = result;
            try {
                DataManager manager = (DataManager) field("manager");
                DataMatrix buffer = (DataMatrix) field("buffer");
                ARXConfiguration config = (ARXConfiguration) field("config");
                Method internal = ARXConfiguration.class.getDeclaredMethod("getInternalConfiguration");
                internal.setAccessible(true);
                this.applicator = new TransformationApplicator(manager, buffer, config.getQualityModel(),
                        (ARXConfigurationInternal) internal.invoke(config));
                this.space = (SolutionSpace<?>) field("solutionSpace");
            } catch (ReflectiveOperationException | RuntimeException e) {
                this.applicator = null;
            }
        }

        private Object field(String name) throws ReflectiveOperationException {
            Field f = ARXResult.class.getDeclaredField(name);
            f.setAccessible(true);
            return f.get(result);
        }

        boolean check(ARXNode n) {
            if (applicator != null) {
                Boolean ok = applicator.applyTransformation(space.getTransformation(n.getTransformation())).properties.privacyModelFulfilled;
                return ok != null && ok;
            }
            DataHandle out = result.getOutput(n, false);  // ARX checks the node itself
            out.release();
            Anonymity a = n.getAnonymity();
            if (a != Anonymity.ANONYMOUS && a != Anonymity.NOT_ANONYMOUS) throw new IllegalStateException("unchecked node");
            return a == Anonymity.ANONYMOUS;
        }
    }

    static String hierarchyPath(Map<String, String> c, String attr) {
        if (c.containsKey("hier." + attr)) return c.get("hier." + attr);
        File f = new File(c.get("data"));
        String stem = f.getName().replaceAll("\\.csv$", "");
        return new File(f.getAbsoluteFile().getParentFile(), stem + "_hierarchy_" + attr + ".csv").getPath();
    }

    /** The data with QIDs (their hierarchies), the sensitive attribute, all else insensitive. */
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
}
