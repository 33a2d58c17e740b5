import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXClassificationConfiguration;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.aggregates.ClassificationConfigurationLogisticRegression;
import org.deidentifier.arx.aggregates.ClassificationConfigurationRandomForest;
import org.deidentifier.arx.aggregates.StatisticsClassification;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.metric.Metric;

/**
 * ARX's StatisticsClassification on an anonymized table: the classifier trained on the original
 * and on ARX's output with the same folds, and the ZeroR baseline. One JSON object on stdout.
 *
 * Tokens (key=value):
 *   data=PATH qids=a,b,c [sensitive=col]     as ArxBench (ArxSetup.data); hierarchies beside the data
 *   k=5 [t=0.2 tmodel=equal|ordered|hierarchical] supp=1.0   the privacy models and suppression limit
 *   levels=a:1,b:0,...                        classify ARX's output at this node (else the global optimum)
 *   target=col                                the class attribute
 *   features=a,b,c                            the features (default: the QIDs)
 *   model=logistic|forest                     ARX's default configuration of that classifier (10 folds,
 *                                             at most 100,000 records, seed Integer.MAX_VALUE)
 *   folds=10 max_records=100000               override the configuration
 *   outliers=PATH                             one line per input record: 1 = suppressed by ARX
 *
 *   java -cp "$CP" ArxClassify data=adult.csv qids=... k=5 supp=1.0 target=salary-class
 */
public class ArxClassify {

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        Map<String, String> c = ArxSetup.parse(args);
        Data data = ArxSetup.data(c);
        ARXConfiguration config = ARXConfiguration.create();
        config.setQualityModel(Metric.createLossMetric());
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
        config.setSuppressionLimit(Double.parseDouble(c.getOrDefault("supp", "1.0")));
        ARXResult result = new ARXAnonymizer().anonymize(data, config);

        ARXNode node;
        if (c.containsKey("levels")) {
            Map<String, Integer> want = new HashMap<>();
            for (String kv : c.get("levels").split(",")) {
                String[] p = kv.split(":");
                want.put(p[0], Integer.parseInt(p[1]));
            }
            ARXLattice lattice = result.getLattice();
            String[] qis = lattice.getBottom().getQuasiIdentifyingAttributes();
            int[] tr = new int[qis.length];
            for (int i = 0; i < qis.length; i++) tr[i] = want.get(qis[i]);
            node = lattice.getNode(tr);
        } else {
            node = result.getGlobalOptimum();
        }
        Map<String, Object> r = new LinkedHashMap<>();
        if (node == null) {
            r.put("found", false);
            System.out.println(json(r));
            return;
        }
        DataHandle out = result.getOutput(node, false);
        List<String> qids = Arrays.asList(c.get("qids").split(","));
        Map<String, Object> levels = new LinkedHashMap<>();
        for (String q : qids) levels.put(q, node.getGeneralization(q));
        int suppressed = 0;
        PrintWriter w = c.containsKey("outliers") ? new PrintWriter(c.get("outliers"), "UTF-8") : null;
        for (int i = 0; i < out.getNumRows(); i++) {
            boolean o = out.isOutlier(i);
            if (o) suppressed++;
            if (w != null) w.println(o ? '1' : '0');
        }
        if (w != null) w.close();

        String target = c.get("target");
        String[] features = c.getOrDefault("features", c.get("qids")).split(",");
        ARXClassificationConfiguration<?> cc;
        String model = c.getOrDefault("model", "logistic");
        if (model.equals("logistic")) {
            cc = ClassificationConfigurationLogisticRegression.create();
        } else if (model.equals("forest")) {
            cc = ClassificationConfigurationRandomForest.create();
        } else {
            throw new IllegalArgumentException("model must be logistic or forest");
        }
        if (c.containsKey("folds")) cc.setNumFolds(Integer.parseInt(c.get("folds")));
        if (c.containsKey("max_records")) cc.setMaxRecords(Integer.parseInt(c.get("max_records")));
        long t0 = System.nanoTime();
        StatisticsClassification s = out.getStatistics().getClassificationPerformance(features, target, cc);
        long t1 = System.nanoTime();

        r.put("found", true);
        r.put("levels", levels);
        r.put("records", out.getNumRows());
        r.put("suppressed", suppressed);
        r.put("loss", node.getHighestScore() == null ? null : node.getHighestScore().toString());
        r.put("model", model);
        r.put("folds", cc.getNumFolds());
        r.put("max_records", cc.getMaxRecords());
        r.put("seed", (int) cc.getSeed());
        r.put("measurements", s.getNumMeasurements());
        r.put("original_accuracy", s.getOriginalAccuracy());
        r.put("zeror_accuracy", s.getZeroRAccuracy());
        r.put("accuracy", s.getAccuracy());
        r.put("original_brier", s.getOriginalBrierScore());
        r.put("zeror_brier", s.getZerorBrierScore());
        r.put("brier", s.getBrierScore());
        r.put("brier_skill_score", s.getBrierSkillScore());
        Map<String, Object> auc = new LinkedHashMap<>();
        Map<String, Object> aucOriginal = new LinkedHashMap<>();
        for (String v : new TreeSet<>(s.getClassValues())) {
            aucOriginal.put(v, s.getOriginalROCCurve(v).getAUC());
            auc.put(v, s.getROCCurve(v) == null ? null : s.getROCCurve(v).getAUC());
        }
        r.put("original_auc", aucOriginal);
        r.put("auc", auc);
        r.put("classify_ms", (t1 - t0) / 1e6);
        out.release();
        System.out.println(json(r));
    }

    private static String json(Object o) {
        if (o == null) return "null";
        if (o instanceof String) return "\"" + ((String) o).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        if (o instanceof Boolean || o instanceof Integer || o instanceof Long) return o.toString();
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
