"""``nnkit.metrics``: AUC's bucketed algorithm, Precision/Recall options, mergeable state
(``merge_state``, ``stateless_result``), devices, ``get`` and argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nnkit
import nnkit.metrics as M
from tests.metrics.test_metrics import TWO_UPDATES, close, value

# ----------------------------------------------------------------------------- AUC

# The 3-threshold case of Keras's tests: thresholds [-1e-7, 0.5, 1 + 1e-7],
# y_pred [0, 0.5, 0.3, 0.9] (0.5 is not > 0.5), weights [1, 2, 3, 4]:
# tp [7, 4, 0], fp [3, 0, 0], fn [0, 3, 7], tn [0, 3, 3]
# TPR [1, 4/7, 0], FPR [1, 0, 0], precision [0.7, 1, 0]
Y_TRUE, Y_PRED, SW = [0, 0, 1, 1], [0, 0.5, 0.3, 0.9], [1, 2, 3, 4]
AUC_CASES = [
    ("ROC", "interpolation", (1 - 0) * (1 + 4 / 7) / 2),
    ("ROC", "majoring", 1.0),
    ("ROC", "minoring", 4 / 7),
    ("PR", "majoring", (1 - 4 / 7) * 1 + (4 / 7) * 1),
    ("PR", "minoring", (1 - 4 / 7) * 0.7),
    # Davis & Goadrich: P = tp + fp = [10, 4, 0], dTP = [3, 4], dP = [6, 4],
    # slope = [0.5, 1], intercept = tp[1:] - slope * P[1:] = [2, 0],
    # ratio P_A / P_B = [10 / 4, 1 (P_B = 0)]: slope * (dTP + intercept * log(ratio)) / 7
    ("PR", "interpolation", 0.5 * (3 + 2 * math.log(2.5)) / 7 + 1 * (4 + 0) / 7),
    # gains: recall_gain [1, 0, 0], precision_gain [0, 1, 1]: widths [1, 0]
    ("PRGAIN", "interpolation", 0.5),
    ("PRGAIN", "majoring", 1.0),
    ("PRGAIN", "minoring", 0.0),
]


@pytest.mark.parametrize("curve,summation,expected", AUC_CASES)
def test_auc_hand_worked_weighted(curve, summation, expected):
    m = M.AUC(num_thresholds=3, curve=curve, summation_method=summation)
    m.update_state(Y_TRUE, Y_PRED, sample_weight=SW)
    np.testing.assert_array_equal(m.true_positives.numpy(), [7, 4, 0])
    np.testing.assert_array_equal(m.false_positives.numpy(), [3, 0, 0])
    np.testing.assert_array_equal(m.false_negatives.numpy(), [0, 3, 7])
    np.testing.assert_array_equal(m.true_negatives.numpy(), [0, 3, 3])
    close(m, expected)


def test_auc_interpolation_formula_exact_and_not_sklearn():
    # 5 thresholds [-1e-7, .25, .5, .75, 1+1e-7]; positives score .35 .8 .6, negatives
    # .1 .6 .3: tp [3, 3, 2, 1, 0], fp [3, 2, 1, 0, 0], so TPR [1, 1, 2/3, 1/3, 0] and
    # FPR [1, 2/3, 1/3, 0, 0]; trapezoids 1/3 * 2/2 + 1/3 * (5/3)/2 + 1/3 * 1/2 = 7/9.
    # The exact AUC (sklearn) is 7.5/9: .35 and .3 share the bucket (.25, .5].
    y_true, y_pred = [0, 0, 1, 1, 1, 0], [0.1, 0.6, 0.35, 0.8, 0.6, 0.3]
    m = M.AUC(num_thresholds=5, dtype="float64")
    m.update_state(y_true, y_pred)
    np.testing.assert_array_equal(m.true_positives.numpy(), [3, 3, 2, 1, 0])
    np.testing.assert_array_equal(m.false_positives.numpy(), [3, 2, 1, 0, 0])
    assert value(m) == pytest.approx(7 / 9, abs=1e-15)
    metrics = pytest.importorskip("sklearn.metrics")
    assert metrics.roc_auc_score(y_true, y_pred) == pytest.approx(7.5 / 9)


def keras_auc_reference(y_true, y_pred, weights, num_thresholds=200):
    """Keras's ROC-AUC (interpolation) written with NumPy: counts of ``p > t``."""
    t = np.array(
        [-1e-7] + [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)] + [1 + 1e-7]
    )
    pos = np.clip(y_pred, 0, 1)[None, :] > t[:, None]
    lab = (y_true != 0)[None, :]
    tp, fp = (pos & lab) @ weights, (pos & ~lab) @ weights
    fn, tn = (~pos & lab) @ weights, (~pos & ~lab) @ weights
    tpr = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1e-300), 0)
    fpr = np.where(fp + tn > 0, fp / np.maximum(fp + tn, 1e-300), 0)
    return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2))


def test_auc_random_equals_keras_algorithm_and_near_sklearn(rng):
    metrics = pytest.importorskip("sklearn.metrics")
    n = 3000
    y_true = rng.integers(0, 2, n)
    y_pred = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y_true)))
    w = rng.uniform(0.2, 2.0, n)
    m = M.AUC(dtype="float64")
    m.update_state(y_true[:1000], y_pred[:1000], sample_weight=w[:1000])
    m.update_state(y_true[1000:], y_pred[1000:], sample_weight=w[1000:])
    assert value(m) == pytest.approx(keras_auc_reference(y_true, y_pred, w), abs=1e-12)
    assert abs(value(m) - metrics.roc_auc_score(y_true, y_pred, sample_weight=w)) < 1e-2
    m32 = M.AUC()
    m32.update_state(y_true, y_pred)
    assert abs(value(m32) - metrics.roc_auc_score(y_true, y_pred)) < 1e-2
    # uneven thresholds take the compare-every-threshold path
    thresholds = sorted(rng.uniform(0.01, 0.99, 30).tolist())
    m = M.AUC(thresholds=thresholds, dtype="float64")
    assert not m._thresholds_distributed_evenly
    m.update_state(y_true, y_pred)
    ref = keras_auc_reference(y_true, y_pred, np.ones(n), num_thresholds=3)
    assert value(m) != pytest.approx(ref)  # sanity: a different grid gives another value
    assert abs(value(m) - metrics.roc_auc_score(y_true, y_pred)) < 5e-2


def test_auc_logits_multilabel_and_label_weights():
    y_pred = np.array([[0, 0.5, 0.3, 0.9], [0.1, 0.2, 0.3, 0.4]], dtype=np.float32).T
    y_true = np.array([[0, 0, 1, 1], [0, 0, 1, 1]]).T
    # thresholds [-eps, .25, .5, .75, 1+eps]; label 0: TPR [1, 1, .5, .5, 0],
    # FPR [1, .5, 0, 0, 0] -> .5 * 1 + .5 * .75 = .875; label 1: TPR [1, 1, 0, 0, 0],
    # FPR [1, 0, 0, 0, 0] -> 1
    m = M.AUC(num_thresholds=5, multi_label=True)
    assert m.variables == []  # built at the first update (no num_labels)
    m.update_state(y_true, y_pred)
    assert tuple(m.true_positives.shape) == (5, 2)
    close(m, (0.875 + 1.0) / 2)
    merged = M.AUC(num_thresholds=5, multi_label=True)
    assert merged.stateless_update_state([], y_true, y_pred)[0].shape == (5, 2)
    assert float(merged.true_positives.abs().sum()) == 0  # built, own state still zero
    merged.merge_state([M.AUC(num_thresholds=5, multi_label=True), m])
    close(merged, (0.875 + 1.0) / 2)
    with pytest.raises(ValueError, match="configurations differ"):
        merged.merge_state(M.AUC(num_thresholds=7, multi_label=True))
    m = M.AUC(num_thresholds=5, multi_label=True, num_labels=2, label_weights=[0.75, 0.25])
    m.update_state(y_true, y_pred)
    close(m, 0.875 * 0.75 + 1.0 * 0.25)
    logits = np.log(y_pred + 1e-12) - np.log(1 - y_pred + 1e-12)
    m = M.AUC(num_thresholds=5, multi_label=True, from_logits=True)
    m.update_state(y_true, logits)
    close(m, (0.875 + 1.0) / 2, rtol=1e-5)
    m = M.AUC(multi_label=False)  # flattened: every element is a prediction
    m.update_state(y_true, y_true)
    close(m, 1.0)
    # Keras's extra-dims case: every label of rank-3 data flattened
    probs = 1 / (
        1 + np.exp(np.array([[[-10.0, 10, -10], [10, -10, 10]], [[-12.0, 12, -12], [12, -12, 12]]]))
    )
    labels = np.array([[[1, 0, 0], [1, 0, 0]], [[0, 1, 1], [0, 1, 1]]])
    m = M.AUC()
    m.update_state(labels, probs)
    close(m, 0.5)


def test_auc_manual_thresholds():
    m = M.AUC(num_thresholds=2, thresholds=[0.5])
    assert m.num_thresholds == 3
    np.testing.assert_allclose(m.thresholds, [0.0, 0.5, 1.0], atol=1e-7)
    m.update_state(Y_TRUE, Y_PRED)
    close(m, 0.75)


# ------------------------------------------------------------- Precision / Recall


def test_precision_recall_top_k_with_ties_and_scalar_weight():
    # Keras's test: the top 3 of [.2, .1, .4, 0, .2] are indices 2, 0, 4 (tie broken to the
    # lower index); of [.2, .6, .4, .2, .2] indices 1, 2, 0
    p, r = M.Precision(top_k=3), M.Recall(top_k=3)
    for m in (p, r):
        m.update_state(
            [[0, 1, 1, 0, 1]], [[0.2, 0.1, 0.4, 0, 0.2]], sample_weight=[[1, 4, 2, 3, 5]]
        )
        m.update_state([1, 0, 1, 1, 1], [0.2, 0.6, 0.4, 0.2, 0.2], sample_weight=3)
    close(p, ((2 + 5) + (3 + 3)) / ((1 + 2 + 5) + (3 + 3 + 3)))
    close(r, ((2 + 5) + (3 + 3)) / ((4 + 2 + 5) + (3 + 3 + 3 + 3)))
    m = M.Precision(thresholds=0.7, top_k=2)
    m.update_state([0, 1, 1, 0, 1], [0.2, 0.8, 0.6, 0, 0.2])
    close(m, 1.0)
    assert float(m.true_positives[0]) == 1 and float(m.false_positives[0]) == 0


def test_precision_recall_class_id():
    y_pred = [[0.1, 0.2, 0.7], [0.5, 0.3, 0.2], [0.2, 0.6, 0.2], [0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]
    y_true = [[0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]]
    for cls in (M.Precision, M.Recall):
        m = cls(class_id=1)
        m.update_state(y_true, y_pred)  # class 1: one positive, predicted (0.6 > 0.5)
        close(m, 1.0)
        m.update_state([[0, 1, 0]], [[0.9, 0.05, 0.05]])  # a missed positive
        close(m, 1.0 if cls is M.Precision else 0.5)
        with pytest.raises(ValueError, match="class_id"):
            cls(class_id=2).update_state([0, 1, 1], [0.2, 0.6, 0.7])
        with pytest.raises(ValueError, match="class_id"):
            cls(class_id=5).update_state(y_true, y_pred)


# --------------------------------------------------------------- state handling


@pytest.mark.parametrize("name", sorted(TWO_UPDATES))
def test_merge_state_and_stateless_result_equal_one_stream(name):
    factory, batches, expected = TWO_UPDATES[name]
    shards = [factory() for _ in batches]
    for shard, batch in zip(shards, batches):
        shard.update_state(*batch[:-1], sample_weight=batch[-1])
    # a data-parallel all-reduce: sum each state variable over the shards
    reduced = [sum(vs[1:], vs[0]) for vs in zip(*(s.variables for s in shards))]
    own = [v.numpy().copy() for v in shards[0].variables]
    out = shards[0].stateless_result(reduced)
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-6, atol=1e-7)
    for v, before in zip(shards[0].variables, own):
        np.testing.assert_array_equal(v.numpy(), before)  # own state untouched
    merged = factory()  # unbuilt (F1Score) merges too
    merged.merge_state(shards)
    close(merged, expected)
    assert all(isinstance(v, nnkit.Tensor) and v.dtype == nnkit.float32 for v in merged.variables)
    stepped = factory()
    first = batches[0]
    stepped.update_state(*first[:-1], sample_weight=first[-1])
    state = stepped.variables
    new = stepped.stateless_update_state(state, *batches[1][:-1], sample_weight=batches[1][-1])
    stepped.set_variables(new)
    close(stepped, expected)


def test_state_errors_and_custom_subclass():
    m = M.Mean()
    with pytest.raises(ValueError, match="expected 2 state values"):
        m.set_variables([nnkit.tensor(1.0)])
    with pytest.raises(ValueError, match="shape"):
        m.set_variables([nnkit.zeros(2), nnkit.zeros(())])
    with pytest.raises(ValueError, match="cannot merge a Sum"):
        m.merge_state(M.Sum())

    class BinaryTruePositives(M.Metric):
        def __init__(self, name="binary_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable((), name="true_positives")

        def update_state(self, y_true, y_pred, sample_weight=None):
            hit = (nnkit.as_tensor(y_true) != 0) & (nnkit.as_tensor(y_pred) != 0)
            self.true_positives = self.true_positives + hit.float().sum()

        def result(self):
            return self.true_positives

    t = BinaryTruePositives()
    assert float(t([1, 1, 0], [1, 0, 0])) == 1.0 and float(t([1], [1])) == 2.0
    assert [float(v) for v in t.variables] == [2.0] and repr(t).startswith("<BinaryTrue")

    class Forgot(M.Metric):
        def __init__(self):
            self.x = self.add_variable((), name="x")

    with pytest.raises(RuntimeError, match="super"):
        Forgot()


def test_empty_batch_adds_nothing():
    for factory, y_true, y_pred in [
        (M.Mean, np.zeros((0, 3)), None),
        (M.MeanSquaredError, np.zeros((0, 1)), np.zeros((0, 1))),
        (M.RootMeanSquaredError, np.zeros(0), np.zeros(0)),
        (M.CategoricalAccuracy, np.zeros((0, 3)), np.zeros((0, 3))),
        (M.SparseCategoricalAccuracy, np.zeros(0), np.zeros((0, 3))),
        (M.SparseTopKCategoricalAccuracy, np.zeros(0), np.zeros((0, 3))),
        (M.Precision, np.zeros(0), np.zeros(0)),
        (M.AUC, np.zeros(0), np.zeros(0)),
        (M.F1Score, np.zeros((0, 3)), np.zeros((0, 3))),
        (M.BinaryCrossentropy, np.zeros((0, 1)), np.zeros((0, 1))),
        (M.SparseCategoricalCrossentropy, np.zeros(0), np.zeros((0, 3))),
    ]:
        m = factory()
        if y_pred is None:
            m.update_state(y_true)
        else:
            m.update_state(y_true, y_pred)
        assert all(float(v.abs().sum()) == 0 for v in m.variables), factory


def test_dtype_float64_and_names():
    m = M.MeanSquaredError(dtype="float64")
    m.update_state(np.array([[0.1]]), np.array([[0.4]]))  # float64 arrays stay float64
    assert m.dtype == "float64" and m.result().dtype == nnkit.float64
    assert value(m) == pytest.approx(0.09, abs=1e-15)
    assert M.Mean(dtype=nnkit.float64).dtype == "float64"
    a, b = M.AUC(), M.AUC()
    assert a.name.startswith("auc") and b.name.startswith("auc_") and a.name != b.name
    assert M.Precision(name="p").name == "p" and M.F1Score().name == "f1_score"
    assert repr(M.Mean()) == "<Mean name=mean>"


def test_metrics_on_device(device):
    x = nnkit.tensor([[0.1, 0.7, 0.2], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]], device=device)
    labels = nnkit.tensor([1, 2, 2], device=device)
    onehot = nnkit.tensor([[0, 1, 0], [0, 0, 1], [0, 0, 1]], device=device)
    for m, args, expected in [
        (M.SparseCategoricalAccuracy(), (labels, x), 2 / 3),
        (
            M.CategoricalCrossentropy(),
            (onehot, x),
            -(math.log(0.7) + math.log(0.1) + math.log(0.6)) / 3,
        ),
        (M.AUC(num_thresholds=3), (onehot, x), None),
        (M.F1Score(average="micro"), (onehot, x), 2 / 3),
        (M.Precision(top_k=1), (onehot, x), 2 / 3),
    ]:
        m.update_state(*args, sample_weight=nnkit.ones(3, device=device))
        out = m.result()
        assert str(out.device) == str(x.device)
        if expected is not None:
            assert float(out.cpu()) == pytest.approx(expected, rel=1e-6)


# ------------------------------------------------------------------ get / errors


@pytest.mark.parametrize(
    "identifier,cls",
    [
        ("accuracy", M.Accuracy),
        ("acc", M.Accuracy),
        ("Accuracy", M.Accuracy),
        ("binary_accuracy", M.BinaryAccuracy),
        ("categorical_accuracy", M.CategoricalAccuracy),
        ("sparse_categorical_accuracy", M.SparseCategoricalAccuracy),
        ("top_k_categorical_accuracy", M.TopKCategoricalAccuracy),
        ("sparse_top_k_categorical_accuracy", M.SparseTopKCategoricalAccuracy),
        ("mse", M.MeanSquaredError),
        ("MSE", M.MeanSquaredError),
        ("mean_squared_error", M.MeanSquaredError),
        ("mae", M.MeanAbsoluteError),
        ("mean_absolute_error", M.MeanAbsoluteError),
        ("root_mean_squared_error", M.RootMeanSquaredError),
        ("rmse", M.RootMeanSquaredError),
        ("auc", M.AUC),
        ("AUC", M.AUC),
        ("precision", M.Precision),
        ("Recall", M.Recall),
        ("f1_score", M.F1Score),
        ("F1Score", M.F1Score),
        ("f_beta_score", M.FBetaScore),
        ("bce", M.BinaryCrossentropy),
        ("binary_crossentropy", M.BinaryCrossentropy),
        ("categorical_crossentropy", M.CategoricalCrossentropy),
        ("sparse_categorical_crossentropy", M.SparseCategoricalCrossentropy),
        ("mean", M.Mean),
        ("sum", M.Sum),
        (M.AUC, M.AUC),
        ({"class_name": "AUC", "config": {"num_thresholds": 7}}, M.AUC),
    ],
)
def test_get_resolves_keras_names(identifier, cls):
    m = M.get(identifier)
    assert type(m) is cls
    assert M.get(identifier) is not m  # a new instance each time
    if isinstance(identifier, dict):
        assert m.num_thresholds == 7


def test_get_passthrough_and_unknown():
    m = M.Mean()
    assert M.get(m) is m and M.get(None) is None
    fn = lambda y_true, y_pred: y_true  # noqa: E731
    assert M.get(fn) is fn
    with pytest.raises(
        ValueError,
        match="Could not interpret metric identifier: 'acuracy'.*Did you mean 'accuracy'",
    ):
        M.get("acuracy")
    with pytest.raises(ValueError, match="Could not interpret"):
        M.get(3)
    with pytest.raises(ValueError, match="unknown metric class 'Nope'"):
        M.get({"class_name": "Nope", "config": {}})


@pytest.mark.parametrize(
    "factory,kwargs,argument",
    [
        (M.AUC, {"num_thresholds": 1}, "num_thresholds"),
        (M.AUC, {"num_thresholds": 2.5}, "num_thresholds"),
        (M.AUC, {"curve": "Invalid"}, "curve"),
        (M.AUC, {"summation_method": "Invalid"}, "summation_method"),
        (M.AUC, {"thresholds": [0.5, 1.5]}, "thresholds"),
        (M.AUC, {"num_labels": 3}, "num_labels"),
        (M.AUC, {"label_weights": [-1.0, 1.0]}, "label_weights"),
        (M.Precision, {"thresholds": [0.2, -0.1]}, "thresholds"),
        (M.Precision, {"top_k": 0}, "top_k"),
        (M.Recall, {"class_id": -1}, "class_id"),
        (M.Recall, {"thresholds": "high"}, "thresholds"),
        (M.F1Score, {"average": "samples"}, "average"),
        (M.F1Score, {"threshold": 0.0}, "threshold"),
        (M.F1Score, {"threshold": 1.5}, "threshold"),
        (M.FBetaScore, {"beta": 0.0}, "beta"),
        (M.TopKCategoricalAccuracy, {"k": 0}, "k"),
        (M.SparseTopKCategoricalAccuracy, {"k": 2.0}, "k"),
        (M.BinaryAccuracy, {"threshold": "0.5"}, "threshold"),
        (M.BinaryCrossentropy, {"label_smoothing": 2}, "label_smoothing"),
        (M.BinaryCrossentropy, {"from_logits": "yes"}, "from_logits"),
        (M.CategoricalCrossentropy, {"axis": 1.0}, "axis"),
        (M.SparseCategoricalCrossentropy, {"ignore_class": 0.5}, "ignore_class"),
        (M.Mean, {"dtype": "int32"}, "dtype"),
        (M.Sum, {"dtype": "nonsense"}, "dtype"),
        (M.MeanSquaredError, {"name": 3}, "name"),
    ],
)
def test_bad_arguments_name_metric_and_argument(factory, kwargs, argument):
    with pytest.raises(ValueError) as info:
        factory(**kwargs)
    message = str(info.value)
    assert factory.__name__ in message and f"`{argument}`" in message, message


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="F1Score.*2D inputs"):
        M.F1Score().update_state([1, 0], [0.2, 0.8])
    with pytest.raises(ValueError, match="Mean.*sample_weight.*cannot be broadcast"):
        M.Mean().update_state([[1, 2], [3, 4]], sample_weight=[1, 2, 3])
    with pytest.raises(ValueError, match="Precision.*same shape"):
        M.Precision().update_state([[1, 0, 1]], [[0.2, 0.8]])
    with pytest.raises(ValueError, match="target class ids"):
        M.SparseCategoricalCrossentropy().update_state([3], [[0.2, 0.8]])
    with pytest.raises(ValueError, match="rank 2"):
        M.AUC(multi_label=True).update_state([1, 0], [0.3, 0.6])


def test_sparse_crossentropy_ignore_class_and_smoothing():
    m = M.SparseCategoricalCrossentropy(ignore_class=-1)
    m.update_state([1, -1, 2], [[0.05, 0.95, 0], [0.3, 0.3, 0.4], [0.1, 0.8, 0.1]])
    close(m, (-math.log(0.95) - math.log(0.1)) / 2)  # the ignored sample has weight 0
    # label smoothing 0.3 over 3 classes: targets [0.1, 0.8, 0.1]
    m = M.CategoricalCrossentropy(label_smoothing=0.3)
    m.update_state([[0, 1, 0]], [[0.2, 0.5, 0.3]])
    close(m, -(0.1 * math.log(0.2) + 0.8 * math.log(0.5) + 0.1 * math.log(0.3)))
    # binary smoothing 0.2: targets 0.9 / 0.1
    m = M.BinaryCrossentropy(label_smoothing=0.2)
    m.update_state([[1]], [[0.7]])
    close(m, -(0.9 * math.log(0.7) + 0.1 * math.log(0.3)))


def test_get_for_outputs_picks_accuracy_by_shapes_as_keras_compile():
    z = np.zeros
    assert type(M.get_for_outputs("accuracy", z((4, 1)), z((4, 1)))) is M.BinaryAccuracy
    assert type(M.get_for_outputs("acc", z(4), z((4, 3)))) is M.SparseCategoricalAccuracy
    assert type(M.get_for_outputs("acc", z((4, 1)), z((4, 3)))) is M.SparseCategoricalAccuracy
    m = M.get_for_outputs("Accuracy", z((4, 3)), z((4, 3)))
    assert type(m) is M.CategoricalAccuracy and m.name == "Accuracy"
    m = M.get_for_outputs("mse", z((4, 1)), z((4, 1)))
    assert type(m) is M.MeanSquaredError and m.name == "mse"
    m = M.get_for_outputs(lambda y_true, y_pred: (y_true - y_pred).abs(), z(2), z(2))
    assert isinstance(m, M.MeanMetricWrapper)
    m.update_state(np.array([[1.0], [2.0]]), np.array([[0.0], [0.0]]))
    close(m, 1.5)
    with pytest.raises(ValueError, match="None"):
        M.get_for_outputs(None, z(2), z(2))
