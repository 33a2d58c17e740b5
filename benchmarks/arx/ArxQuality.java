import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.aggregates.StatisticsQuality;
import org.deidentifier.arx.aggregates.quality.QualityMeasureColumnOriented;
import org.deidentifier.arx.aggregates.quality.QualityMeasureRowOriented;
import org.deidentifier.arx.criteria.KAnonymity;

/**
 * ARX's quality models (StatisticsQuality) of one transformation: the reference for ppdp's
 * engine/utility measures. One JSON object on stdout.
 *
 *   java ArxQuality data=PATH qids=a,b,c levels=1,0,2 k=5 [supp=1.0] [hier.a=PATH ...]
 *
 * The lattice is pinned to the one node ``levels`` (minimum = maximum generalization per QID),
 * so ARX's output is that node with ARX's suppression of the classes that violate k-anonymity,
 * as ppdp publishes it. Data typed as strings (ARX's default), as in ArxSetup: ordinals come
 * from the hierarchy rows, which ppdp writes in its canonical order (hier.* files).
 */
public class ArxQuality {

    private static String num(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "null" : Double.toString(v);
    }

    private static String column(QualityMeasureColumnOriented m, List<String> qids) {
        StringBuilder b = new StringBuilder("{\"value\": ").append(num(m.getArithmeticMean())).append(", \"columns\": {");
        for (int i = 0; i < qids.size(); i++) {
            b.append(i == 0 ? "" : ", ").append('"').append(qids.get(i)).append("\": ")
             .append(m.isAvailable(qids.get(i)) ? num(m.getValue(qids.get(i))) : "null");
        }
        return b.append("}}").toString();
    }

    private static String row(QualityMeasureRowOriented m) {
        return "{\"value\": " + (m.isAvailable() ? num(m.getValue()) : "null") + "}";
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        Map<String, String> c = ArxSetup.parse(args);
        List<String> qids = Arrays.asList(c.get("qids").split(","));
        String[] levels = c.get("levels").split(",");
        Data data = ArxSetup.data(c);
        for (int i = 0; i < qids.size(); i++) {
            int level = Integer.parseInt(levels[i]);
            data.getDefinition().setMinimumGeneralization(qids.get(i), level);
            data.getDefinition().setMaximumGeneralization(qids.get(i), level);
        }
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(ArxSetup.integer(c, "k")));
        config.setSuppressionLimit(Double.parseDouble(c.getOrDefault("supp", "1.0")));
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        DataHandle out = result.getOutput(false);
        if (out == null) throw new IllegalStateException("ARX found no solution at levels " + c.get("levels"));
        StatisticsQuality q = out.getStatistics().getQualityStatistics();
        int suppressed = 0;
        for (int r = 0; r < out.getNumRows(); r++) if (out.isOutlier(r)) suppressed++;
        StringBuilder b = new StringBuilder("{\"rows\": ").append(out.getNumRows()).append(", \"suppressed\": ").append(suppressed)
            .append(", \"levels\": \"").append(Arrays.toString(result.getGlobalOptimum().getTransformation())).append('"')
            .append(", \"granularity\": ").append(column(q.getGranularity(), qids))
            .append(", \"intensity\": ").append(column(q.getGeneralizationIntensity(), qids))
            .append(", \"nu-entropy\": ").append(column(q.getNonUniformEntropy(), qids))
            .append(", \"squared-error\": ").append(column(q.getAttributeLevelSquaredError(), qids))
            .append(", \"aecs\": ").append(row(q.getAverageClassSize()))
            .append(", \"discernibility\": ").append(row(q.getDiscernibility()))
            .append(", \"ambiguity\": ").append(row(q.getAmbiguity()))
            .append(", \"record-squared-error\": ").append(row(q.getRecordLevelSquaredError()))
            .append(", \"sse-sst\": ").append(row(q.getSSESST()))
            .append('}');
        System.out.println(b);
    }
}
