"""Will my analysis still work? A classifier trained on the release against one trained on the
original, with the same folds, as ARX's StatisticsClassification does (docs/concepts/utility.md).

For each of ARX's ``k`` folds (``utility/folds.py``: the same records as ARX), three classifiers
are trained on the other folds and evaluated on it:

- the **original** classifier on the source's values of the features;
- the **release** classifier on the published values, trained only on released records (ARX
  leaves suppressed records, its outliers, out of training) and evaluated on every record of the
  fold, a suppressed one with ``*`` for each feature (what ARX's output handle shows for it);
- **ZeroR**, the class frequencies of the training folds.

Every feature is categorical: a value, original or generalized, is one token per attribute, one-hot
encoded (ARX hashes the token ``Attribute-<i>:<value>`` into a 1,000-slot vector; without a
feature scaling expression no value is numeric). The class label of every record is the
source's value of the target. The scores are ARX's: accuracy, the multi-class Brier score (the sum
over classes of the squared difference between the predicted probability and the 0/1 outcome,
averaged over records), ARX's Brier skill score ``1 - Brier(release) / Brier(original)``, and one
area under the ROC curve per class (one against the rest; ties counted half, where ARX orders
tied records by position).

Only aggregates come out: accuracies, scores and areas over thousands of records; no prediction,
probability or value of a record leaves this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdp.engine.utility.folds import ARX_FOLDS, ARX_MAX_RECORDS, ARX_SEED, arx_folds
from ppdp.errors import SpecError

MODELS = ("logistic", "forest")
SUPPRESSED = "*"  # the value ARX's output handle shows for every QID of a suppressed record


@dataclass(frozen=True)
class Scores:
    """One classifier's scores over all evaluated records."""

    accuracy: float
    brier: float
    auc: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "brier": self.brier, "auc": dict(self.auc)}


@dataclass(frozen=True)
class Classification:
    """The classifier trained on the release against the original and ZeroR (ARX's
    StatisticsClassification), with the settings that reproduce it."""

    target: str
    features: tuple[str, ...]
    model: str
    folds: int
    seed: int
    max_records: int
    records: int  # records sampled and evaluated (at most max_records)
    suppressed: int  # of them, suppressed in the release
    classes: tuple[str, ...]
    original: Scores
    release: Scores
    zeror: Scores
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float:
        """Accuracy lost to anonymization: original minus release."""
        return self.original.accuracy - self.release.accuracy

    @property
    def brier_skill_score(self) -> float:
        """ARX's Brier skill score of the release against the original: 1 - B(release)/B(original)."""
        return 0.0 if self.release.brier == 0.0 else 1.0 - self.release.brier / self.original.brier

    @property
    def brier_skill_vs_zeror(self) -> float:
        """The usual skill score, against the ZeroR reference: 1 - B(release)/B(ZeroR)."""
        return 0.0 if self.zeror.brier == 0.0 else 1.0 - self.release.brier / self.zeror.brier

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "features": list(self.features), "model": self.model, "folds": self.folds,
                "seed": self.seed, "max_records": self.max_records, "records": self.records,
                "suppressed": self.suppressed, "classes": list(self.classes),
                "original": self.original.to_json(), "release": self.release.to_json(), "zeror": self.zeror.to_json(),
                "gap": self.gap, "brier_skill_score": self.brier_skill_score,
                "brier_skill_vs_zeror": self.brier_skill_vs_zeror, "settings": dict(self.settings)}

    def lines(self) -> list[str]:
        """The human-readable block ``ppdp utility --classify`` prints."""
        out = [f"classification of {self.target!r} from {', '.join(self.features)} ({self.model}, {self.folds} folds, "
               f"{self.records:,} records sampled with seed {self.seed}, {self.suppressed:,} suppressed)",
               f"  accuracy       : original {self.original.accuracy:.4f}, release {self.release.accuracy:.4f}, "
               f"ZeroR {self.zeror.accuracy:.4f}  (gap {self.gap:+.4f})",
               f"  Brier score    : original {self.original.brier:.4f}, release {self.release.brier:.4f}, "
               f"ZeroR {self.zeror.brier:.4f}; skill {self.brier_skill_score:+.4f} (vs ZeroR {self.brier_skill_vs_zeror:+.4f})"]
        for c in self.classes:
            out.append(f"  AUC {c!s:<11}: original {self.original.auc[c]:.4f}, release {self.release.auc[c]:.4f}")
        return out


def available() -> bool:
    """Whether classification can run here: scikit-learn, the ``ppdp[utility]`` extra, is installed."""
    import importlib.util

    return importlib.util.find_spec("sklearn") is not None


def _sklearn() -> Any:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise SpecError("--classify needs scikit-learn. Hint: pip install 'ppdp[utility]'.") from None
    from sklearn import ensemble, linear_model
    return linear_model, ensemble


def _estimator(model: str, seed: int) -> Any:
    linear_model, ensemble = _sklearn()
    if model == "logistic":
        return linear_model.LogisticRegression(max_iter=1000)
    # ARX's ClassificationConfigurationRandomForest defaults: 500 trees, sqrt(p) variables per
    # split, leaves of at least 5 records, at most 100 leaves, Gini
    return ensemble.RandomForestClassifier(n_estimators=500, min_samples_leaf=5, max_leaf_nodes=100,
                                           criterion="gini", max_features="sqrt", random_state=seed % 2**32, n_jobs=1)


def _probabilities(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, n_classes: int,
                   model: str, seed: int) -> np.ndarray:
    """P(class | features) for each test record, columns in class order; one class in training
    gives it probability 1."""
    out = np.zeros((len(x_test), n_classes))
    seen = np.unique(y_train)
    if len(seen) == 1:
        out[:, seen[0]] = 1.0
        return out
    train, test = _one_hot(x_train, x_test)
    est = _estimator(model, seed).fit(train, y_train)
    out[:, est.classes_] = est.predict_proba(test)
    return out


def _one_hot(x_train: np.ndarray, x_test: np.ndarray) -> tuple[Any, Any]:
    """Sparse one-hot matrices of integer-coded values (records x attributes): one column per
    (attribute, value) seen in training; a test value never seen in training sets no column."""
    from scipy import sparse

    cols_train, cols_test, width = [], [], 0
    for j in range(x_train.shape[1]):
        seen = np.unique(x_train[:, j])
        cols_train.append(width + np.searchsorted(seen, x_train[:, j]))
        pos = np.searchsorted(seen, x_test[:, j]).clip(0, len(seen) - 1)
        cols_test.append(np.where(seen[pos] == x_test[:, j], width + pos, -1))
        width += len(seen)

    def matrix(cols: list[np.ndarray], rows: int) -> Any:
        c = np.column_stack(cols).ravel()
        r = np.repeat(np.arange(rows), len(cols))
        keep = c >= 0
        return sparse.csr_matrix((np.ones(int(keep.sum())), (r[keep], c[keep])), shape=(rows, width))

    return matrix(cols_train, len(x_train)), matrix(cols_test, len(x_test))


def _codes(values: np.ndarray) -> np.ndarray:
    """Each column's text values as integer codes (the one-hot encoding needs only equality)."""
    out = np.empty(values.shape, dtype=np.int64)
    for j in range(values.shape[1]):
        _, out[:, j] = np.unique(values[:, j], return_inverse=True)
    return out


def _zeror(y_train: np.ndarray, n_test: int, n_classes: int) -> np.ndarray:
    counts = np.bincount(y_train, minlength=n_classes).astype(float)
    return np.tile(counts / counts.sum(), (n_test, 1))


def _predicted(p: np.ndarray) -> np.ndarray:
    """ARX's prediction: the class of highest probability, the first in class order on a tie."""
    return np.argmax(p, axis=1)


def auc_one_vs_rest(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for ``positive`` records (Mann-Whitney U, ties
    counted half); 0 when one side is empty (ARX's ROCCurve.getAUC turns NaN into 0)."""
    pos, neg = int(positive.sum()), int((~positive).sum())
    if pos == 0 or neg == 0:
        return 0.0
    order = np.argsort(score, kind="stable")
    s = score[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):  # average ranks of tied scores
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[i:j + 1] = (i + j) / 2.0 + 1.0
        i = j + 1
    r = np.empty(len(s))
    r[order] = ranks
    return float((r[positive].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def _scores(p: np.ndarray, y: np.ndarray, classes: Sequence[str]) -> Scores:
    onehot = np.eye(len(classes))[y]
    return Scores(accuracy=float(np.mean(_predicted(p) == y)),
                  brier=float(np.mean(np.sum((p - onehot) ** 2, axis=1))),
                  auc={c: auc_one_vs_rest(p[:, i], y == i) for i, c in enumerate(classes)})


def classify_arrays(original: np.ndarray, released: np.ndarray, suppressed: np.ndarray, labels: Sequence[Any], *,
                    target: str, features: Sequence[str], model: str = "logistic", folds: int = ARX_FOLDS,
                    max_records: int = ARX_MAX_RECORDS, seed: int = ARX_SEED) -> Classification:
    """The three classifiers on records given in the source's key order: ``original`` and
    ``released`` are (records x features) arrays of values (text), ``suppressed`` marks the
    records the release leaves out, ``labels`` the target's value of each record."""
    if model not in MODELS:
        raise SpecError(f"unknown --model {model!r}; one of {', '.join(MODELS)}.")
    n = len(labels)
    if n == 0:
        raise SpecError("no records to classify.")
    if folds < 2:
        raise SpecError("--folds must be at least 2.")
    text = np.asarray(["" if v is None else str(v) for v in labels], dtype=object)
    classes = tuple(sorted(set(text.tolist())))  # ARX sorts the class values as strings
    y = np.searchsorted(np.asarray(classes, dtype=object), text).astype(np.int64)
    orig = _codes(np.asarray(original, dtype=object).astype(str))
    rel = np.asarray(released, dtype=object)
    rel = _codes(np.where(suppressed[:, None], SUPPRESSED, rel).astype(str))
    parts = arx_folds(n, k=folds, max_records=max_records, seed=seed)
    evaluated = np.concatenate(parts)
    k = len(classes)
    p_orig, p_rel, p_zero = (np.zeros((len(evaluated), k)) for _ in range(3))
    at = 0
    for i, test in enumerate(parts):
        train = np.concatenate([f for j, f in enumerate(parts) if j != i])
        kept = train[~suppressed[train]]
        span = slice(at, at + len(test))
        p_orig[span] = _probabilities(orig[train], y[train], orig[test], k, model, seed)
        p_zero[span] = _zeror(y[train], len(test), k)
        if len(kept):
            p_rel[span] = _probabilities(rel[kept], y[kept], rel[test], k, model, seed)
        else:  # nothing released to learn from: no prediction (ARX leaves the output classifier untrained)
            p_rel[span] = 0.0
        at += len(test)
    y_eval = y[evaluated]
    return Classification(target=target, features=tuple(features), model=model, folds=len(parts), seed=seed,
                          max_records=max_records, records=len(evaluated), suppressed=int(suppressed[evaluated].sum()),
                          classes=classes, original=_scores(p_orig, y_eval, classes),
                          release=_scores(p_rel, y_eval, classes), zeror=_scores(p_zero, y_eval, classes),
                          settings={"encoding": "one-hot per attribute value", "suppressed_value": SUPPRESSED,
                                    "sampling": "java.util.Random(seed) shuffle, first max_records (ARX)"})


def classify(con: Any, release: str, target: str, *, version: int | None = None, features: Sequence[str] | None = None,
             model: str = "logistic", folds: int = ARX_FOLDS, max_records: int = ARX_MAX_RECORDS,
             seed: int = ARX_SEED) -> Classification:
    """The classifiers of ``classify_arrays`` on a published version and its source: the records
    are read in the source's key order (features and target of the source, the features the
    version publishes), the training runs here; only the scores are returned."""
    from ppdp.engine.utility.version import published_version
    from ppdp.sql.analysis import classification_rows

    pv = published_version(con, release, version)
    feats = tuple(features) if features else tuple(q for q in pv.qids if q != target)
    if not feats:
        raise SpecError(f"no features to classify {target!r} with. Hint: --features a,b,c.")
    source = pv.source(con)
    src_cols = {c for c, _ in (con.relation_columns(source.schema or getattr(con, "default_schema", "main"), source.table) or [])} \
        if source.table is not None else None
    for col in (*feats, target):
        if src_cols is not None and col not in src_cols:
            raise SpecError(f"no column {col!r} in the source of {release!r}.")
    released = [pv.released(f) for f in feats]
    if all(r is None for r in released):
        raise SpecError(f"version {pv.version} of {release!r} publishes none of {', '.join(feats)} as columns "
                        "(heterogeneous releases publish ranges).")
    sql = classification_rows(source.sql(), pv.release, pv.table, pv.key, feats, released, target, con.dialect)
    frame = con.query(sql)
    n = len(feats)
    original = np.column_stack([frame[f"o{i}"].to_numpy() for i in range(n)]).astype(object)
    rel = np.column_stack([frame[f"r{i}"].to_numpy() for i in range(n)]).astype(object)
    rel = np.where(rel == None, SUPPRESSED, rel)  # noqa: E711 - a feature the version does not publish
    suppressed = frame["suppressed"].to_numpy().astype(bool)
    result = classify_arrays(original, rel, suppressed, frame["label"].to_list(), target=target, features=feats,
                             model=model, folds=folds, max_records=max_records, seed=seed)
    return result
