import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.DataSubset;
import org.deidentifier.arx.criteria.DPresence;
import org.deidentifier.arx.criteria.KMap;

/**
 * The setup the ARX harnesses share (ArxBench, ArxVerdicts, ArxPopVerdicts): key=value tokens,
 * the data with its attribute types and hierarchies, a research subset / sample as row indices,
 * and ARX's population-based criteria (DPresence, KMap) built from tokens. Compile it with them:
 * {@code javac -cp $CP -d OUT ArxSetup.java ArxBench.java}.
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
}
