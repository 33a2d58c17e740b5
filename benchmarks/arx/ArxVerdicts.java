import java.io.BufferedReader;
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
import java.util.Map;

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
import org.deidentifier.arx.criteria.BasicBLikeness;
import org.deidentifier.arx.criteria.DDisclosurePrivacy;
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
                Hierarchy.create(ArxSetup.hierarchyPath(c, sa(c)), StandardCharsets.UTF_8, ';')));
        CRITERIA.put("recursive-cl-diversity", (c, d) -> new RecursiveCLDiversity(sa(c), real(c, "c"), integer(c, "l")));
        CRITERIA.put("basic-beta-likeness", (c, d) -> new BasicBLikeness(sa(c), real(c, "beta")));
        CRITERIA.put("enhanced-beta-likeness", (c, d) -> new EnhancedBLikeness(sa(c), real(c, "beta")));
        CRITERIA.put("delta-disclosure", (c, d) -> new DDisclosurePrivacy(sa(c), real(c, "delta")));
        // The data is the population; subset=PATH lists the research subset's (sample's) rows.
        CRITERIA.put("d-presence", ArxSetup::dPresence);
        CRITERIA.put("k-map", (c, d) -> {
            Map<String, String> sample = new LinkedHashMap<>(c);
            sample.remove("estimator");  // against the population: subset=PATH is the sample
            return ArxSetup.kMap(sample, d, integer(c, "k"));
        });
        CRITERIA.put("k-map-poisson", (c, d) -> {
            Map<String, String> e = new LinkedHashMap<>(c);
            e.put("estimator", "poisson");
            return ArxSetup.kMap(e, d, integer(c, "k"));
        });
        CRITERIA.put("k-map-zero-truncated-poisson", (c, d) -> {
            Map<String, String> e = new LinkedHashMap<>(c);
            e.put("estimator", "zero-truncated-poisson");
            return ArxSetup.kMap(e, d, integer(c, "k"));
        });
    }

    static String sa(Map<String, String> c) {
        String s = c.get("sensitive");
        if (s == null) throw new IllegalArgumentException("this criterion needs sensitive=COLUMN");
        return s;
    }

    static int integer(Map<String, String> c, String key) {
        return ArxSetup.integer(c, key);
    }

    static double real(Map<String, String> c, String key) {
        return ArxSetup.real(c, key);
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        Map<String, String> c = ArxSetup.parse(args);
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
        Data data = ArxSetup.data(c);
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
}
