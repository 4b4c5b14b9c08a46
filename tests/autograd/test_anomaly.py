"""Anomaly detection: NaN/Inf in backward names the op and the user's forward line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nnkit
from nnkit.autograd import Function


class InfGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * float("inf")


def _line_of(marker: str) -> int:
    src, _ = inspect.getsourcelines(inspect.getmodule(_line_of))
    for k, line in enumerate(src):
        if marker in line and "_line_of" not in line:
            return k + 1
    raise AssertionError(marker)


def test_nan_in_builtin_backward_names_op_and_user_line():
    x = nnkit.tensor([0.0, 4.0], requires_grad=True)
    with nnkit.detect_anomaly():
        y = x.sqrt()  # FORWARD-SQRT
        with np.errstate(divide="ignore", invalid="ignore"), pytest.raises(RuntimeError) as info:
            y.sum().backward()
    msg = str(info.value)
    assert "SqrtBackward" in msg and "nan or inf" in msg
    assert f'{__file__}", line {_line_of("FORWARD-SQRT")}' in msg
    assert msg.rstrip().endswith("y = x.sqrt()  # FORWARD-SQRT")  # nnkit frames trimmed


def test_user_function_and_operator_call_site():
    x = nnkit.tensor([1.0, 2.0], requires_grad=True)
    nnkit.set_detect_anomaly(True)
    try:
        y = InfGrad.apply(x) + x  # FORWARD-USER
        z = y * 2
        with pytest.raises(RuntimeError) as info:
            z.sum().backward()
    finally:
        nnkit.set_detect_anomaly(False)
    msg = str(info.value)
    assert "InfGradBackward" in msg
    assert f"line {_line_of('FORWARD-USER')}" in msg
    assert "apply" not in msg.splitlines()[-2]  # last frame shown is the user's, not nnkit's


def test_composed_op_reports_user_line():
    x = nnkit.tensor([[0.0, 1.0]], requires_grad=True)
    with nnkit.detect_anomaly(), np.errstate(divide="ignore", invalid="ignore"):
        y = (x.log() * 0).sum()  # FORWARD-LOG
        with pytest.raises(RuntimeError, match="Backward") as info:
            y.backward()
    assert f"line {_line_of('FORWARD-LOG')}" in str(info.value)


def test_without_anomaly_mode_no_error_and_no_trace():
    x = nnkit.tensor([1.0, 2.0], requires_grad=True)
    y = InfGrad.apply(x)
    assert y.grad_fn.trace is None
    y.sum().backward()
    assert np.isinf(x.grad.numpy()).all()


def test_forward_outside_anomaly_mode_reports_missing_site():
    x = nnkit.tensor([1.0, 2.0], requires_grad=True)
    y = InfGrad.apply(x)
    with nnkit.detect_anomaly(), pytest.raises(RuntimeError, match="not recorded"):
        y.sum().backward()


def test_anomaly_mode_is_thread_local_and_restored():
    import threading

    seen = []
    with nnkit.detect_anomaly():
        t = threading.Thread(target=lambda: seen.append(nnkit.autograd.is_anomaly_enabled()))
        t.start()
        t.join()
        assert nnkit.autograd.is_anomaly_enabled()
    assert seen == [False] and not nnkit.autograd.is_anomaly_enabled()


def test_finite_backward_passes_in_anomaly_mode():
    x = nnkit.tensor([1.0, 4.0], requires_grad=True)
    with nnkit.detect_anomaly():
        x.sqrt().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.25])
