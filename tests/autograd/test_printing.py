"""``str(t)`` and ``repr(t)`` (DESIGN §3): exact strings for 0-d to 4-d tensors."""

from __future__ import annotations

import pytest

import nnkit
from nnkit.autograd import printing


@pytest.fixture(autouse=True)
def _restore_printoptions():
    saved = dict(printing._options)
    yield
    printing._options.update(saved)


def _footer(shape, dtype="float32", device="cpu", extra=""):
    # a device prints in full ('cuda' is 'cuda:0'), as torch does
    return f"Tensor(shape={shape}, dtype={dtype}, device={nnkit.device(device)}{extra})"


def test_0d(device):
    assert str(nnkit.tensor(1.0, device=device)) == "(1.0)\n" + _footer([], device=device)
    assert str(nnkit.tensor(-2.5, device=device)) == "(-2.5000)\n" + _footer([], device=device)
    assert str(nnkit.tensor(7, device=device)) == "(7)\n" + _footer([], "int64", device)


def test_1d(device):
    t = nnkit.tensor([1.0, 2.0, 3.0], device=device)
    assert str(t) == "[1.0, 2.0, 3.0]\n" + _footer([3], device=device)


def test_1d_mixed_widths_right_aligned():
    t = nnkit.tensor([1.5, -20.25, 300.0])
    assert str(t) == "[  1.5000, -20.2500, 300.0000]\n" + _footer([3])


def test_2d_int(device):
    t = nnkit.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    assert str(t) == "[[1, 2, 3],\n [4, 5, 6]]\n" + _footer([2, 3], "int64", device)


def test_2d_columns_right_aligned():
    t = nnkit.tensor([[1.5, -2.25, 3.0], [4.0, 5.0, 600.0]])
    assert str(t) == (
        "[[  1.5000,  -2.2500,   3.0000],\n [  4.0000,   5.0000, 600.0000]]\n" + _footer([2, 3])
    )


def test_3d():
    t = nnkit.arange(12).reshape(2, 3, 2)
    assert str(t) == (
        "(0,.,.) = \n"
        "[[ 0,  1],\n"
        " [ 2,  3],\n"
        " [ 4,  5]]\n"
        "\n"
        "(1,.,.) = \n"
        "[[ 6,  7],\n"
        " [ 8,  9],\n"
        " [10, 11]]\n" + _footer([2, 3, 2], "int64")
    )


def test_4d_slices_in_memory_order(device):
    t = nnkit.arange(36, dtype=nnkit.float32, device=device).reshape(2, 3, 2, 3)
    blocks = []
    for i in range(2):
        for j in range(3):
            base = 18 * i + 6 * j
            rows = [
                ", ".join(f"{float(base + 3 * r + c):4.1f}" for c in range(3)) for r in range(2)
            ]
            blocks.append(f"({i},{j},.,.) = \n[[{rows[0]}],\n [{rows[1]}]]")
    expected = "\n\n".join(blocks) + "\n" + _footer([2, 3, 2, 3], device=device)
    assert str(t) == expected
    assert str(t).startswith(
        "(0,0,.,.) = \n[[ 0.0,  1.0,  2.0],\n [ 3.0,  4.0,  5.0]]\n\n(0,1,.,.) = \n"
    )
    assert "(1,0,.,.) = " in str(t)


def test_footer_requires_grad_and_grad_fn(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert str(x) == "[1.0, 2.0]\n" + _footer([2], device=device, extra=", requires_grad=True")
    y = x * 2
    assert str(y) == "[2.0, 4.0]\n" + _footer([2], device=device, extra=", grad_fn=<MulBackward>")
    assert str(y.detach()).endswith(_footer([2], device=device))


def test_bool_and_float64(device):
    assert str(nnkit.tensor([True, False], device=device)) == (
        "[ True, False]\n" + _footer([2], "bool", device)
    )
    assert str(nnkit.tensor([0.5, 0.25], dtype=nnkit.float64, device=device)) == (
        "[0.5000, 0.2500]\n" + _footer([2], "float64", device)
    )


def test_scientific_and_special_values():
    assert str(nnkit.tensor([1e-9, 1.0])).splitlines()[0] == "[1.0000e-09, 1.0000e+00]"
    assert str(nnkit.tensor([float("nan"), 1.5, float("-inf")])).splitlines()[0] == (
        "[   nan, 1.5000,   -inf]"
    )


def test_empty():
    assert str(nnkit.zeros(0)) == "[]\n" + _footer([0])


def test_summarised_1d():
    t = nnkit.arange(2000)
    assert str(t) == "[   0,    1,    2, ..., 1997, 1998, 1999]\n" + _footer([2000], "int64")


def test_summarised_2d():
    t = nnkit.arange(2000).reshape(40, 50)
    lines = str(t).splitlines()
    assert lines[0] == "[[   0,    1,    2, ...,   47,   48,   49],"
    assert lines[3] == " ...,"
    assert lines[6] == " [1950, 1951, 1952, ..., 1997, 1998, 1999]]"
    assert lines[7] == _footer([40, 50], "int64")
    assert len(lines) == 8


def test_summarised_3d_elides_slices():
    text = str(nnkit.arange(2000).reshape(10, 10, 20))
    heads = [line for line in text.splitlines() if line.endswith(" = ")]
    assert heads == [f"({i},.,.) = " for i in (0, 1, 2, 7, 8, 9)]
    assert "\n\n...\n\n(7,.,.) = " in text


def test_set_printoptions():
    nnkit.set_printoptions(precision=2)
    assert str(nnkit.tensor([0.125, 1.5])).splitlines()[0] == "[0.12, 1.50]"
    nnkit.set_printoptions(threshold=5, edgeitems=1)
    assert str(nnkit.arange(10)).splitlines()[0] == "[0, ..., 9]"


def test_non_contiguous_prints_logical_order():
    t = nnkit.arange(6).reshape(2, 3).T
    assert str(t).splitlines()[:3] == ["[[0, 3],", " [1, 4],", " [2, 5]]"]


def test_repr_compact_forms():
    assert repr(nnkit.tensor([1.0, 2.0])) == "tensor([1.0, 2.0])"
    assert repr(nnkit.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]])"
    x = nnkit.tensor([1.0], requires_grad=True)
    assert repr(x) == "tensor([1.0], requires_grad=True)"
    assert repr(x * 2) == "tensor([2.0], grad_fn=<MulBackward>)"
    assert repr((x * 2.5).sum()) == "tensor(2.5000, grad_fn=<SumBackward>)"
    assert repr(nnkit.tensor(3)) == "tensor(3)"
    assert repr(nnkit.tensor([1.0], dtype=nnkit.float64)) == ("tensor([1.0], dtype=nnkit.float64)")
    assert repr(nnkit.arange(4).reshape(1, 2, 2)) == (
        "tensor(shape=[1, 2, 2],\n(0,.,.) = \n[[0, 1],\n [2, 3]])"
    )


def test_format_spec_on_0d():
    assert f"{nnkit.tensor(1.23456):.2f}" == "1.23"
