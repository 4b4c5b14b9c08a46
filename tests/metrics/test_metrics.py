"""``nnkit.metrics``: Keras 3's stateful metrics, their values, state, config and lookup.

Expected values are Keras's: the docstring examples of ``keras.metrics`` and hand
computations from Keras's formulas (the arithmetic is in the comments), cross-checked
against scikit-learn on random data wherever scikit-learn has the same metric.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import nnkit
import nnkit.metrics as M


def value(metric):
    return np.asarray(metric.result().numpy(), dtype=np.float64)


def close(metric, expected, rtol=2e-6, atol=1e-7):
    np.testing.assert_allclose(value(metric), expected, rtol=rtol, atol=atol)


# Keras's docstring examples: (factory, y_true, y_pred, sample_weight, expected)
KERAS_EXAMPLES = [
    (M.MeanSquaredError, [[0, 1], [0, 0]], [[1, 1], [0, 0]], None, 0.25),
    (M.MeanAbsoluteError, [[0, 1], [0, 0]], [[1, 1], [0, 0]], None, 0.25),
    (M.MeanAbsoluteError, [[0, 1], [0, 0]], [[1, 1], [0, 0]], [1, 0], 0.5),
    (M.RootMeanSquaredError, [[0, 1], [0, 0]], [[1, 1], [0, 0]], None, 0.5),
    (M.RootMeanSquaredError, [[0, 1], [0, 0]], [[1, 1], [0, 0]], [1, 0], 0.70710677),
    (M.Accuracy, [[1], [2], [3], [4]], [[0], [2], [3], [4]], None, 0.75),
    (M.Accuracy, [[1], [2], [3], [4]], [[0], [2], [3], [4]], [1, 1, 0, 0], 0.5),
    (M.BinaryAccuracy, [[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]], None, 0.75),
    (M.BinaryAccuracy, [[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]], [1, 0, 0, 1], 0.5),
    (M.CategoricalAccuracy, [[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], None, 0.5),
    (
        M.CategoricalAccuracy,
        [[0, 0, 1], [0, 1, 0]],
        [[0.1, 0.9, 0.8], [0.05, 0.95, 0]],
        [0.7, 0.3],
        0.3,
    ),
    (M.SparseCategoricalAccuracy, [[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]], None, 0.5),
    (M.SparseCategoricalAccuracy, [[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]], [0.7, 0.3], 0.3),
    (
        lambda: M.TopKCategoricalAccuracy(k=1),
        [[0, 0, 1], [0, 1, 0]],
        [[0.1, 0.9, 0.8], [0.05, 0.95, 0]],
        None,
        0.5,
    ),
    (
        lambda: M.TopKCategoricalAccuracy(k=1),
        [[0, 0, 1], [0, 1, 0]],
        [[0.1, 0.9, 0.8], [0.05, 0.95, 0]],
        [0.7, 0.3],
        0.3,
    ),
    (
        lambda: M.SparseTopKCategoricalAccuracy(k=1),
        [2, 1],
        [[0.1, 0.9, 0.8], [0.05, 0.95, 0]],
        None,
        0.5,
    ),
    (
        lambda: M.SparseTopKCategoricalAccuracy(k=1),
        [2, 1],
        [[0.1, 0.9, 0.8], [0.05, 0.95, 0]],
        [0.7, 0.3],
        0.3,
    ),
    (
        lambda: M.SparseTopKCategoricalAccuracy(k=1, from_sorted_ids=True),
        [2, 1],
        [[1, 0, 3], [1, 2, 3]],
        None,
        0.5,
    ),
    (M.Precision, [0, 1, 1, 1], [1, 0, 1, 1], None, 0.6666667),
    (M.Precision, [0, 1, 1, 1], [1, 0, 1, 1], [0, 0, 1, 0], 1.0),
    (lambda: M.Precision(top_k=2), [0, 0, 1, 1], [1, 1, 1, 1], None, 0.0),
    (lambda: M.Precision(top_k=4), [0, 0, 1, 1], [1, 1, 1, 1], None, 0.5),
    (M.Recall, [0, 1, 1, 1], [1, 0, 1, 1], None, 0.6666667),
    (M.Recall, [0, 1, 1, 1], [1, 0, 1, 1], [0, 0, 1, 0], 1.0),
    (lambda: M.AUC(num_thresholds=3), [0, 0, 1, 1], [0, 0.5, 0.3, 0.9], None, 0.75),
    (lambda: M.AUC(num_thresholds=3), [0, 0, 1, 1], [0, 0.5, 0.3, 0.9], [1, 0, 0, 1], 1.0),
    (M.BinaryCrossentropy, [[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]], None, 0.81492424),
    (M.BinaryCrossentropy, [[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]], [1, 0], 0.9162905),
    (
        M.CategoricalCrossentropy,
        [[0, 1, 0], [0, 0, 1]],
        [[0.05, 0.95, 0], [0.1, 0.8, 0.1]],
        None,
        1.1769392,
    ),
    (
        M.CategoricalCrossentropy,
        [[0, 1, 0], [0, 0, 1]],
        [[0.05, 0.95, 0], [0.1, 0.8, 0.1]],
        [0.3, 0.7],
        1.6271976,
    ),
    (M.SparseCategoricalCrossentropy, [1, 2], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]], None, 1.1769392),
    (
        M.SparseCategoricalCrossentropy,
        [1, 2],
        [[0.05, 0.95, 0], [0.1, 0.8, 0.1]],
        [0.3, 0.7],
        1.6271976,
    ),
]


@pytest.mark.parametrize("factory,y_true,y_pred,sw,expected", KERAS_EXAMPLES)
def test_keras_docstring_values(factory, y_true, y_pred, sw, expected):
    m = factory()
    assert m.update_state(y_true, y_pred, sample_weight=sw) is None
    out = m.result()
    assert isinstance(out, nnkit.Tensor) and out.ndim == 0 and out.dtype == nnkit.float32
    close(m, expected, rtol=1e-6, atol=1e-6)


def test_mean_and_sum_docstring_values():
    m = M.Mean()
    m.update_state([1, 3, 5, 7])
    close(m, 4.0)
    m.reset_state()
    m.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    close(m, 2.0)
    s = M.Sum()
    s.update_state([1, 3, 5, 7])
    close(s, 16.0)
    s.reset_state()
    s.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    close(s, 4.0)


def f1_docstring():
    return M.F1Score(threshold=0.5)


def _log(*ps):
    return [-math.log(p) for p in ps]


# Two update_state calls, then result(): (factory, [(y_true, y_pred, sw), ...], expected)
TWO_UPDATES = {
    # (1*1 + 3*1) + (2 + 4) over weights 1+1 + 1+1
    "Mean": (M.Mean, [([1, 3, 5, 7], [1, 1, 0, 0]), ([2, 4], None)], 10 / 4),
    # 4 + per-sample sums (3 + 7)
    "Sum": (M.Sum, [([1, 3, 5, 7], [1, 1, 0, 0]), ([[1, 2], [3, 4]], None)], 14.0),
    # per-sample [0.5, 0] then 0.5 with weight 2: (0.5 + 1) / (2 + 2)
    "MeanSquaredError": (
        M.MeanSquaredError,
        [([[0, 1], [0, 0]], [[1, 1], [0, 0]], None), ([[1, 1]], [[1, 0]], [2])],
        1.5 / 4,
    ),
    # per-sample squared errors [0.5, 0] then [4]: sqrt(4.5 / 3)
    "RootMeanSquaredError": (
        M.RootMeanSquaredError,
        [([[0, 1], [0, 0]], [[1, 1], [0, 0]], None), ([[2]], [[0]], None)],
        math.sqrt(1.5),
    ),
    # [0.5, 0] then 1.0 with weight 3: (0.5 + 3) / (2 + 3)
    "MeanAbsoluteError": (
        M.MeanAbsoluteError,
        [([[0, 1], [0, 0]], [[1, 1], [0, 0]], None), ([[0, 2]], [[1, 1]], [3])],
        0.7,
    ),
    # 3 of 4, then [1, 0] weighted [1, 3]: (3 + 1) / (4 + 4)
    "Accuracy": (
        M.Accuracy,
        [([[1], [2], [3], [4]], [[0], [2], [3], [4]], None), ([[5], [6]], [[5], [0]], [1, 3])],
        0.5,
    ),
    # 3 of 4, then 1 of 2
    "BinaryAccuracy": (
        M.BinaryAccuracy,
        [
            ([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]], None),
            ([[1], [0]], [[0.4], [0.2]], None),
        ],
        4 / 6,
    ),
    # 1 of 2, then 1 with weight 2: 3 / 4
    "CategoricalAccuracy": (
        M.CategoricalAccuracy,
        [
            ([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], None),
            ([[1, 0, 0]], [[0.5, 0.3, 0.2]], [2]),
        ],
        0.75,
    ),
    "SparseCategoricalAccuracy": (
        M.SparseCategoricalAccuracy,
        [([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]], None), ([0], [[0.5, 0.3, 0.2]], [2])],
        0.75,
    ),
    # k=2: both in the top 2, then class 2 (third highest) with weight 2: 2 / 4
    "TopKCategoricalAccuracy": (
        lambda: M.TopKCategoricalAccuracy(k=2),
        [
            ([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], None),
            ([[0, 0, 1]], [[0.5, 0.3, 0.2]], [2]),
        ],
        0.5,
    ),
    "SparseTopKCategoricalAccuracy": (
        lambda: M.SparseTopKCategoricalAccuracy(k=2),
        [([2, 1], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], None), ([2], [[0.5, 0.3, 0.2]], [2])],
        0.5,
    ),
    # tp 2 fp 1, then tp 1 fp 1: 3 / 5
    "Precision": (
        M.Precision,
        [([0, 1, 1, 1], [1, 0, 1, 1], None), ([1, 0], [0.7, 0.9], None)],
        0.6,
    ),
    # tp 2 fn 1, then tp 1 fn 1: 3 / 5
    "Recall": (M.Recall, [([0, 1, 1, 1], [1, 0, 1, 1], None), ([1, 1], [0.2, 0.9], None)], 0.6),
    # thresholds [-1e-7, 0.5, 1+1e-7]: tp [3, 2, 0], fp [3, 0, 0], fn [0, 1, 3], tn [0, 3, 3]
    # TPR [1, 2/3, 0], FPR [1, 0, 0]: (1 - 0) * (1 + 2/3) / 2 + 0
    "AUC": (
        lambda: M.AUC(num_thresholds=3),
        [([0, 0, 1, 1], [0, 0.5, 0.3, 0.9], None), ([1, 0], [0.6, 0.2], None)],
        5 / 6,
    ),
    # per class (tp, fp, fn): (1, 0, 2), (2, 1, 0), (1+1, 1, 0) -> F1 [0.5, 0.8, 0.8]
    "F1Score": (
        f1_docstring,
        [
            (
                [[1, 1, 1], [1, 0, 0], [1, 1, 0]],
                [[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]],
                None,
            ),
            ([[0, 0, 1]], [[0.1, 0.2, 0.9]], None),
        ],
        [0.5, 0.8, 0.8],
    ),
    # per-sample means of -log: [-log .4, (-log .6 - log .4) / 2], then weight 2 on
    # (-log .8 - log .5) / 2; divided by 2 + 2
    "BinaryCrossentropy": (
        M.BinaryCrossentropy,
        [([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]], None), ([[1, 1]], [[0.8, 0.5]], [2])],
        (_log(0.4)[0] + sum(_log(0.6, 0.4)) / 2 + 2 * sum(_log(0.8, 0.5)) / 2) / 4,
    ),
    "CategoricalCrossentropy": (
        M.CategoricalCrossentropy,
        [
            ([[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]], None),
            ([[1, 0, 0]], [[0.5, 0.25, 0.25]], None),
        ],
        sum(_log(0.95, 0.1, 0.5)) / 3,
    ),
    "SparseCategoricalCrossentropy": (
        M.SparseCategoricalCrossentropy,
        [([1, 2], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]], None), ([0], [[0.5, 0.25, 0.25]], None)],
        sum(_log(0.95, 0.1, 0.5)) / 3,
    ),
}


@pytest.mark.parametrize("name", sorted(TWO_UPDATES))
def test_two_update_state_calls(name):
    factory, batches, expected = TWO_UPDATES[name]
    m = factory()
    for batch in batches:
        m.update_state(*batch[:-1], sample_weight=batch[-1])
    close(m, expected)
    # __call__ is update_state then result: the value over everything seen so far
    m2 = factory()
    for batch in batches:
        out = m2(*batch[:-1], sample_weight=batch[-1])
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(TWO_UPDATES))
def test_reset_state(name):
    factory, batches, _ = TWO_UPDATES[name]
    m, fresh = factory(), factory()
    for batch in batches:
        m.update_state(*batch[:-1], sample_weight=batch[-1])
    m.reset_state()
    assert all(float(v.abs().sum()) == 0.0 for v in m.variables)
    last = batches[-1]
    m.update_state(*last[:-1], sample_weight=last[-1])
    fresh.update_state(*last[:-1], sample_weight=last[-1])
    np.testing.assert_array_equal(value(m), value(fresh))


@pytest.mark.parametrize("name", sorted(TWO_UPDATES))
def test_get_config_round_trip(name):
    factory, batches, _ = TWO_UPDATES[name]
    m = factory()
    config = m.get_config()
    assert config == json.loads(json.dumps(config))
    assert config["name"] == m.name and config["dtype"] == "float32"
    clone = type(m).from_config(config)
    assert type(clone) is type(m) and clone.get_config() == config
    again = M.deserialize(M.serialize(m))
    assert again.get_config() == config
    for metric in (m, clone):
        for batch in batches:
            metric.update_state(*batch[:-1], sample_weight=batch[-1])
    np.testing.assert_array_equal(value(m), value(clone))


def test_configured_round_trips():
    for m in (
        M.AUC(
            num_thresholds=50,
            curve="PR",
            summation_method="majoring",
            name="a",
            dtype="float64",
            multi_label=True,
            num_labels=2,
            from_logits=True,
        ),
        M.AUC(thresholds=[0.3, 0.5], label_weights=[1.0, 2.0]),
        M.Precision(thresholds=[0.2, 0.6], class_id=1),
        M.Recall(top_k=2),
        M.F1Score(average="weighted", threshold=0.4),
        M.FBetaScore(beta=2.0),
        M.BinaryAccuracy(threshold=0.0),
        M.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, axis=1),
        M.SparseCategoricalCrossentropy(ignore_class=-1),
        M.SparseTopKCategoricalAccuracy(k=3, from_sorted_ids=True),
    ):
        config = m.get_config()
        assert config == json.loads(json.dumps(config))
        assert type(m).from_config(config).get_config() == config
    cfg = M.AUC(thresholds=[0.3, 0.5]).get_config()
    assert cfg["thresholds"] == [0.3, 0.5] and cfg["num_thresholds"] == 4
    assert "thresholds" not in M.AUC().get_config()
    assert "beta" not in M.F1Score().get_config()


# scikit-learn cross-checks on random data, fed as two update_state calls
def _two_batches(rng, make):
    a, b = make(rng, 7), make(rng, 5)
    return a, b, tuple(np.concatenate([x, y]) for x, y in zip(a, b))


def _feed(metric, a, b):
    metric.update_state(a[0], a[1], sample_weight=a[2])
    metric.update_state(b[0], b[1], sample_weight=b[2])
    return value(metric)


def _weights(rng, n):
    return rng.uniform(0.1, 2.0, n)


def _onehot(labels, c):
    return np.eye(c)[labels]


def _probs(rng, n, c):
    p = rng.uniform(0.05, 1.0, (n, c))
    return p / p.sum(1, keepdims=True)


def test_regression_metrics_match_sklearn(rng):
    metrics = pytest.importorskip("sklearn.metrics")

    def make(rng, n):
        return rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), _weights(rng, n)

    a, b, (y, p, w) = _two_batches(rng, make)
    mse = metrics.mean_squared_error(y, p, sample_weight=w)
    np.testing.assert_allclose(_feed(M.MeanSquaredError(), a, b), mse, rtol=1e-5)
    np.testing.assert_allclose(_feed(M.RootMeanSquaredError(), a, b), math.sqrt(mse), rtol=1e-5)
    np.testing.assert_allclose(
        _feed(M.MeanAbsoluteError(), a, b),
        metrics.mean_absolute_error(y, p, sample_weight=w),
        rtol=1e-5,
    )
    # (N, 1) targets against (N,) targets: per-sample values either way
    a1 = (a[0][:, :1], a[1][:, 0], a[2])
    b1 = (b[0][:, 0], b[1][:, :1], b[2])
    np.testing.assert_allclose(
        _feed(M.MeanSquaredError(), a1, b1),
        metrics.mean_squared_error(y[:, 0], p[:, 0], sample_weight=w),
        rtol=1e-5,
    )


def test_accuracy_metrics_match_sklearn(rng):
    metrics = pytest.importorskip("sklearn.metrics")
    c = 5

    def make(rng, n):
        labels = rng.integers(0, c, n)
        return labels, rng.uniform(size=(n, c)), _weights(rng, n)

    a, b, (y, p, w) = _two_batches(rng, make)
    acc = metrics.accuracy_score(y, p.argmax(1), sample_weight=w)
    np.testing.assert_allclose(_feed(M.SparseCategoricalAccuracy(), a, b), acc, rtol=1e-6)
    onehot = [(_onehot(x[0], c), x[1], x[2]) for x in (a, b)]
    np.testing.assert_allclose(_feed(M.CategoricalAccuracy(), *onehot), acc, rtol=1e-6)
    exact = [(x[0], x[1].argmax(1), x[2]) for x in (a, b)]
    np.testing.assert_allclose(_feed(M.Accuracy(), *exact), acc, rtol=1e-6)
    for k in (1, 2, 3):
        top = metrics.top_k_accuracy_score(y, p, k=k, sample_weight=w, labels=range(c))
        np.testing.assert_allclose(
            _feed(M.SparseTopKCategoricalAccuracy(k=k), a, b), top, rtol=1e-6
        )
        np.testing.assert_allclose(_feed(M.TopKCategoricalAccuracy(k=k), *onehot), top, rtol=1e-6)
    binary = [(x[0][:, None] % 2, x[1][:, :1], x[2]) for x in (a, b)]
    np.testing.assert_allclose(
        _feed(M.BinaryAccuracy(), *binary),
        metrics.accuracy_score(y % 2, p[:, 0] > 0.5, sample_weight=w),
        rtol=1e-6,
    )


def test_precision_recall_match_sklearn(rng):
    metrics = pytest.importorskip("sklearn.metrics")

    def make(rng, n):
        return rng.integers(0, 2, n), rng.uniform(size=n), _weights(rng, n)

    a, b, (y, p, w) = _two_batches(rng, make)
    for threshold in (0.3, 0.5, 0.7):
        pred = p > threshold
        np.testing.assert_allclose(
            _feed(M.Precision(thresholds=threshold), a, b),
            metrics.precision_score(y, pred, sample_weight=w),
            rtol=1e-6,
        )
        np.testing.assert_allclose(
            _feed(M.Recall(thresholds=threshold), a, b),
            metrics.recall_score(y, pred, sample_weight=w),
            rtol=1e-6,
        )
    # a list of thresholds gives a vector, one value per threshold
    m = M.Precision(thresholds=[0.3, 0.5, 0.7])
    out = _feed(m, a, b)
    assert out.shape == (3,)
    np.testing.assert_allclose(
        out,
        [metrics.precision_score(y, p > t, sample_weight=w) for t in (0.3, 0.5, 0.7)],
        rtol=1e-6,
    )
    # evenly spaced thresholds take the bucketed path: same values
    even = [i / 4 for i in range(5)]
    np.testing.assert_allclose(
        _feed(M.Recall(thresholds=even), a, b),
        [metrics.recall_score(y, p > t, sample_weight=w) for t in even],
        rtol=1e-6,
    )


@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
def test_f1_score_matches_sklearn(rng, average):
    metrics = pytest.importorskip("sklearn.metrics")

    def make(rng, n):
        y = (rng.uniform(size=(n, 4)) < 0.5).astype(np.float64)
        y[:, 0] = 1  # every class has support and predictions: no zero division
        return y, rng.uniform(size=(n, 4)), _weights(rng, n)

    a, b, (y, p, w) = _two_batches(rng, make)
    p[0] = 0.9  # class predictions exist in both streams
    a[1][0] = 0.9
    expected = metrics.f1_score(y, p > 0.5, average=average, sample_weight=w)
    out = _feed(M.F1Score(average=average, threshold=0.5), a, b)
    assert out.shape == ((4,) if average is None else ())
    np.testing.assert_allclose(out, expected, rtol=1e-5)

    # threshold=None: the row's highest score is the (single) positive
    def make_single(rng, n):
        return _onehot(rng.integers(0, 4, n), 4), rng.uniform(size=(n, 4)), _weights(rng, n)

    a, b, (y, p, w) = _two_batches(rng, make_single)
    expected = metrics.f1_score(
        y.argmax(1), p.argmax(1), average=average, sample_weight=w, labels=range(4), zero_division=0
    )
    out = _feed(M.F1Score(average=average), a, b)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_crossentropies_match_sklearn_log_loss(rng):
    metrics = pytest.importorskip("sklearn.metrics")
    c = 4

    def make(rng, n):
        return rng.integers(0, c, n), _probs(rng, n, c), _weights(rng, n)

    a, b, (y, p, w) = _two_batches(rng, make)
    expected = metrics.log_loss(y, p, sample_weight=w, labels=range(c))
    np.testing.assert_allclose(_feed(M.SparseCategoricalCrossentropy(), a, b), expected, rtol=1e-5)
    onehot = [(_onehot(x[0], c), x[1], x[2]) for x in (a, b)]
    np.testing.assert_allclose(_feed(M.CategoricalCrossentropy(), *onehot), expected, rtol=1e-5)
    logits = [(x[0], np.log(x[1]) + 3.0, x[2]) for x in (a, b)]
    np.testing.assert_allclose(
        _feed(M.SparseCategoricalCrossentropy(from_logits=True), *logits), expected, rtol=1e-5
    )
    binary = [((x[0] % 2)[:, None], x[1][:, :1] * 0.9 + 0.05, x[2]) for x in (a, b)]
    expected = metrics.log_loss(y % 2, p[:, 0] * 0.9 + 0.05, sample_weight=w)
    np.testing.assert_allclose(_feed(M.BinaryCrossentropy(), *binary), expected, rtol=1e-5)
    as_logits = [(x[0], np.log(x[1] / (1 - x[1])), x[2]) for x in binary]
    np.testing.assert_allclose(
        _feed(M.BinaryCrossentropy(from_logits=True), *as_logits), expected, rtol=1e-5
    )
