import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXClassificationConfiguration;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.aggregates.ClassificationConfigurationLogisticRegression;
import org.deidentifier.arx.aggregates.ClassificationConfigurationRandomForest;
import org.deidentifier.arx.aggregates.StatisticsClassification;

/**
 * ARX's StatisticsClassification on an anonymized table: the classifier trained on the original
 * and on ARX's output with the same folds, and the ZeroR baseline. One JSON object on stdout.
 *
 * Tokens (key=value):
 *   data=PATH qids=a,b,c [sensitive=col]     as ArxBench (ArxSetup.data); hierarchies beside the data
 *   k=5 [t=0.2 tmodel=equal|ordered|hierarchical] supp=1.0   the privacy models and suppression limit
 *                                             (any configuration token of ArxBench: ArxSetup.config)
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
        ARXConfiguration config = ArxSetup.config(c, data);
        ARXResult result = new ARXAnonymizer().anonymize(data, config);

        ARXNode node = c.containsKey("levels") ? ArxSetup.nodeAt(result, c.get("levels")) : result.getGlobalOptimum();
        Map<String, Object> r = new LinkedHashMap<>();
        if (node == null) {
            r.put("found", false);
            System.out.println(ArxSetup.json(r));
            return;
        }
        DataHandle out = result.getOutput(node, false);
        List<String> qids = Arrays.asList(c.get("qids").split(","));
        Map<String, Object> levels = new LinkedHashMap<>();
        for (String q : qids) levels.put(q, node.getGeneralization(q));
        int suppressed = ArxSetup.suppressed(out, c.get("outliers"));

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
        System.out.println(ArxSetup.json(r));
    }
}
