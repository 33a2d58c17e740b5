import java.io.IOException;
import java.util.Arrays;
import java.util.Map;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXLattice.Anonymity;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.KMap;
import org.deidentifier.arx.metric.Metric;

/**
 * ARX 3.9.2's verdict for every node of the generalization lattice under one population-based
 * privacy model (delta-presence or k-map), with no suppression (limit 0): a node is "1" when every
 * class satisfies the model. Nodes that ARX's search tagged without checking (predictive tagging)
 * are checked by applying them (ARXResult.getOutput), which re-runs ARX's own class checks.
 *
 * Tokens (key=value):
 *   data=PATH qids=a,b,c [sensitive=col]   ';'-separated CSV, hierarchies <dir>/<stem>_hierarchy_<attr>.csv
 *   model=dpresence dmin=X dmax=Y subset=PATH       research rows: one 0-based row index per line
 *   model=kmap k=K subset=PATH                      the data is the population, subset the sample
 *   model=kmap k=K estimator=poisson|zero-truncated-poisson population_size=N significance=A
 * Output: "#qids a,b,c" then "#derived_k K" (k-map estimators), then one line per node:
 * "l1,l2,...,ln 0|1".
 */
public class ArxPopVerdicts {

    public static void main(String[] args) throws IOException {
        Map<String, String> c = ArxSetup.parse(args);
        Data data = ArxSetup.data(c);
        ARXConfiguration config = ARXConfiguration.create();
        config.setQualityModel(Metric.createLossMetric());
        config.setSuppressionLimit(0d);
        KMap kmap = null;
        String model = c.get("model");
        if (model.equals("dpresence")) {
            config.addPrivacyModel(ArxSetup.dPresence(c, data));
        } else if (model.equals("kmap")) {
            kmap = ArxSetup.kMap(c, data, ArxSetup.integer(c, "k"));
            config.addPrivacyModel(kmap);
        } else {
            throw new IllegalArgumentException("model must be dpresence or kmap");
        }
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        String[] qis = result.getLattice().getBottom().getQuasiIdentifyingAttributes();
        StringBuilder out = new StringBuilder();
        out.append("#qids ").append(String.join(",", qis)).append('\n');
        if (kmap != null && kmap.getEstimator() != null) out.append("#derived_k ").append(kmap.getDerivedK()).append('\n');
        // Every node of the lattice (ARX materializes only the nodes its search touched; getNode
        // expands the rest on demand).
        int[] top = result.getLattice().getTop().getTransformation();
        int[] tr = new int[top.length];
        while (true) {
            ARXNode node = result.getLattice().getNode(tr.clone());
            if (node == null) throw new IllegalStateException("no node " + Arrays.toString(tr));
            if (!node.isChecked()) result.getOutput(node, false);
            Anonymity a = node.getAnonymity();
            boolean anonymous = a == Anonymity.ANONYMOUS;
            if (!anonymous && a != Anonymity.NOT_ANONYMOUS) throw new IllegalStateException("unchecked node " + a);
            StringBuilder s = new StringBuilder();
            for (int i = 0; i < tr.length; i++) s.append(i == 0 ? "" : ",").append(tr[i]);
            out.append(s).append(anonymous ? " 1\n" : " 0\n");
            int i = 0;
            while (i < tr.length && tr[i] == top[i]) tr[i++] = 0;
            if (i == tr.length) break;
            tr[i]++;
        }
        System.out.print(out);
    }
}
