"""Stateful metrics in compile/fit/evaluate: exact over the epoch, weighted, resumable,
reduced across ranks, saved with the model."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.callbacks import BackupAndRestore, Callback
from nnkit.distributed import ThreadGroup
from nnkit.nn import Linear, Sigmoid


def problem(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = ((x[:, 0] + 0.5 * rng.normal(size=n)) > 0).astype(np.float32)
    w = rng.uniform(0.2, 2.0, n).astype(np.float32)
    return x, y, w


def model(seed=0, **compile_kwargs):
    with _SEEDING:
        nnkit.manual_seed(seed)
        m = nnkit.Sequential([Linear(4, 1), Sigmoid()])
    m.compile("sgd", "bce", lr=0.3, **compile_kwargs)
    return m


_SEEDING = __import__("threading").Lock()


def reference_auc(x, y, m):
    auc = nnkit.metrics.AUC()
    auc.update_state(y[:, None], m.predict(x, verbose=0))
    return float(auc.result().item())


def test_evaluate_gives_the_metric_over_all_batches_not_a_mean_of_batches():
    x, y, _ = problem()
    m = model(metrics=["auc", "accuracy"])
    logs = m.evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
    assert list(logs) == ["loss", "auc", "accuracy"]
    assert logs["auc"] == pytest.approx(reference_auc(x, y, m), abs=1e-7)
    batch_mean = np.mean([reference_auc(x[i : i + 7], y[i : i + 7], m) for i in range(0, 56, 7)])
    assert abs(batch_mean - logs["auc"]) > 1e-3  # the old per-batch average would differ


def test_fit_logs_the_epoch_value_and_resets_each_epoch():
    x, y, _ = problem()
    seen = []

    class Watch(Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(logs["precision"])

    m = model(metrics=[nnkit.metrics.Precision(thresholds=0.5, name="precision")])
    history = m.fit(x, y, batch_size=20, epochs=2, verbose=0, shuffle=False, callbacks=[Watch()])
    assert len(history.history["precision"]) == 2
    assert history.history["precision"][-1] == seen[-1]  # the running value at the end
    assert len(seen) == 6


def test_weighted_metrics_use_the_sample_weights():
    x, y, w = problem()
    m = model(metrics=["accuracy"], weighted_metrics=["accuracy"])
    logs = m.evaluate(x, y, sample_weight=w, batch_size=16, verbose=0, return_dict=True)
    correct = ((m.predict(x, verbose=0)[:, 0] > 0.5) == (y == 1)).astype(np.float64)
    assert logs["accuracy"] == pytest.approx(correct.mean(), abs=1e-6)
    assert logs["weighted_accuracy"] == pytest.approx((w * correct).sum() / w.sum(), abs=1e-6)


class Crash(Callback):
    def on_train_batch_end(self, batch, logs=None):
        if self.model._fit_state.global_step == 5:
            raise RuntimeError("simulated crash")


def test_a_mid_epoch_resume_keeps_the_metric_state(tmp_path):
    pytest.importorskip("h5py")
    x, y, _ = problem()

    def run(crash):
        m = model(metrics=["auc"])
        callbacks = [BackupAndRestore(tmp_path / "backup", save_freq=1)]
        return m.fit(
            x,
            y,
            batch_size=8,
            epochs=2,
            verbose=0,
            seed=3,
            callbacks=callbacks + ([Crash()] if crash else []),
        )

    with pytest.raises(RuntimeError, match="simulated crash"):
        run(True)
    resumed = run(False).history
    assert resumed == run(False).history  # the backup was deleted: a straight run


@pytest.mark.parametrize("world", [2, 3])
def test_data_parallel_metrics_cover_every_rank(world):
    x, y, _ = problem(n=61)
    kwargs = dict(
        batch_size=6 * world, epochs=2, seed=4, verbose=0, validation_data=problem(n=13, seed=1)[:2]
    )

    def work(comm):
        return (
            model(comm.rank, metrics=["auc", "recall"])
            .fit(x, y, distributed=comm, **kwargs)
            .history
        )

    results = ThreadGroup(world).run(work)
    expected = model(0, metrics=["auc", "recall"]).fit(x, y, **kwargs).history
    for name, values in expected.items():
        np.testing.assert_allclose(results[0][name], values, rtol=1e-5, atol=1e-6, err_msg=name)


def test_saved_models_keep_their_metrics(tmp_path):
    pytest.importorskip("h5py")
    x, y, w = problem()
    m = model(
        metrics=["auc", nnkit.metrics.Recall(thresholds=0.4, name="r40")],
        weighted_metrics=["binary_accuracy"],
    )
    m.fit(x, y, epochs=1, verbose=0)
    m.save(tmp_path / "m.h5")
    loaded = nnkit.load_model(tmp_path / "m.h5")
    assert loaded.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True) == m.evaluate(
        x, y, sample_weight=w, verbose=0, return_dict=True
    )
