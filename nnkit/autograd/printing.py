"""How tensors print (DESIGN §3).

``str(t)``: 0-d ``(1.0)``; 1-d ``[1.0, 2.0, 3.0]``; 2-d nested rows; ≥3-d a sequence
of 2-d slices headed by their leading indices (``(0,1,.,.) = ``); then a footer line
``Tensor(shape=[...], dtype=..., device=...)``. Numbers share one format and are
right-aligned in columns; large tensors are summarised with ``...`` as NumPy does.
Formatting works on a host copy of the values (this is output, not compute).
"""

from __future__ import annotations

import itertools

import numpy as np

from nnkit.autograd.tensor import tensor_method

__all__ = ["tensor_str", "tensor_repr", "set_printoptions"]

_options = {"threshold": 1000, "edgeitems": 3, "precision": 4}


def set_printoptions(
    threshold: int | None = None, edgeitems: int | None = None, precision: int | None = None
) -> None:
    """Set how tensors print (both ``repr`` and ``str``), for the whole process.

    Arguments left as None keep their current value.

    Args:
        threshold: tensors with more elements than this are summarised with ``...``
            (default 1000).
        edgeitems: how many items to show at each end of a summarised dimension
            (default 3).
        precision: digits after the decimal point for floats (default 4).

    Example:
        >>> nnkit.set_printoptions(precision=2)
        >>> nnkit.tensor([1 / 3, 2 / 3])
        tensor([0.33, 0.67])
        >>> nnkit.set_printoptions(threshold=5, edgeitems=2)
        >>> nnkit.arange(10)
        tensor([0, 1, ..., 8, 9])
        >>> nnkit.set_printoptions(threshold=1000, edgeitems=3, precision=4)  # defaults
    """
    for key, val in (("threshold", threshold), ("edgeitems", edgeitems), ("precision", precision)):
        if val is not None:
            _options[key] = int(val)


def _formatter(values: np.ndarray):
    """One number format for all (shown) elements: returns a value -> str function."""
    if values.dtype.kind == "b":
        return lambda v: "True" if v else "False"
    if values.dtype.kind in "iu":
        return lambda v: str(int(v))
    finite = values[np.isfinite(values)].astype(np.float64)
    prec = _options["precision"]
    if finite.size == 0:
        return _float_special(lambda v: f"{v:.1f}")
    big = np.abs(finite).max()
    small = np.abs(finite[finite != 0]).min() if (finite != 0).any() else 0.0
    if np.all(finite == np.round(finite)) and big < 1e8:
        return _float_special(lambda v: f"{v:.1f}")
    if big >= 1e8 or (small and small < 10**-prec) or (big and big / max(small, 1e-300) > 1e8):
        return _float_special(lambda v: f"{v:.{prec}e}")
    return _float_special(lambda v: f"{v:.{prec}f}")


def _float_special(fmt):
    def f(v):
        if np.isnan(v):
            return "nan"
        if np.isinf(v):
            return "inf" if v > 0 else "-inf"
        return fmt(float(v))

    return f


def _edges(n: int, summarise: bool):
    """Indices to show along an axis of length n (None marks the '...')."""
    e = _options["edgeitems"]
    if not summarise or n <= 2 * e:
        return list(range(n))
    return list(range(e)) + [None] + list(range(n - e, n))


def _shown(arr: np.ndarray, summarise: bool) -> np.ndarray:
    """The elements that will be printed (for choosing the format and width)."""
    if not summarise:
        return arr.reshape(-1)
    idx = tuple([i for i in _edges(n, True) if i is not None] for n in arr.shape)
    return arr[np.ix_(*idx)].reshape(-1) if arr.ndim else arr.reshape(-1)


def _row(vec, fmt, width, summarise) -> str:
    items = ["..." if i is None else fmt(vec[i]).rjust(width) for i in _edges(len(vec), summarise)]
    return "[" + ", ".join(items) + "]"


def _matrix(mat, fmt, width, summarise) -> str:
    rows = []
    for i in _edges(mat.shape[0], summarise):
        rows.append(" ..." if i is None else _row(mat[i], fmt, width, summarise))
    body = ",\n ".join(r if r != " ..." else "..." for r in rows)
    return "[" + body + "]"


def _body(arr: np.ndarray) -> str:
    summarise = arr.size > _options["threshold"]
    shown = _shown(arr, summarise)
    fmt = _formatter(shown)
    width = max((len(fmt(v)) for v in shown), default=1)
    if arr.ndim == 0:
        return f"({fmt(arr.item())})"
    if arr.ndim == 1:
        return _row(arr, fmt, width, summarise)
    if arr.ndim == 2:
        return _matrix(arr, fmt, width, summarise)
    blocks = []
    lead = [_edges(n, summarise) for n in arr.shape[:-2]]
    for index in itertools.product(*lead):
        if None in index:
            if not blocks or blocks[-1] != "...":
                blocks.append("...")
            continue
        head = "(" + ",".join(str(i) for i in index) + ",.,.) = "
        blocks.append(head + "\n" + _matrix(arr[index], fmt, width, summarise))
    return "\n\n".join(blocks)


def _footer(t) -> str:
    parts = [f"shape={list(t.shape)}", f"dtype={t.dtype}", f"device={t.device}"]
    if t.grad_fn is not None:
        parts.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        parts.append("requires_grad=True")
    return "Tensor(" + ", ".join(parts) + ")"


def tensor_str(t) -> str:
    """The readable multi-line form of ``t``, which ``str(t)`` and ``print(t)`` give.

    The values (see the module docstring for the layout) followed by a footer line with
    the shape, dtype, device and autograd state.

    Args:
        t: the tensor.

    Returns:
        The text, without a trailing newline.

    Example:
        >>> print(nnkit.tensor([[1.0, 2.5], [3.0, 4.0]]))
        [[1.0000, 2.5000],
         [3.0000, 4.0000]]
        Tensor(shape=[2, 2], dtype=float32, device=cpu)
    """
    return _body(np.asarray(t._impl.data.to_numpy())) + "\n" + _footer(t)


def tensor_repr(t) -> str:
    """The compact, PyTorch-like form that ``repr(t)`` gives.

    ``tensor(<values>, <extras>)``: the extras name a dtype other than float32, int64
    or bool (for an empty tensor, any but float32, as torch), a device other than the
    CPU, and the ``grad_fn`` or ``requires_grad=True``. Tensors of 3 or more dimensions
    list their 2-d slices below a ``shape=[...]`` header.

    Args:
        t: the tensor.

    Returns:
        The text.

    Example:
        >>> nnkit.tensor([1.0, 2.0], requires_grad=True)
        tensor([1.0, 2.0], requires_grad=True)
        >>> nnkit.tensor([1, 2], dtype=nnkit.int32)
        tensor([1, 2], dtype=nnkit.int32)
    """
    arr = np.asarray(t._impl.data.to_numpy())
    extra = []
    if t.dtype.name != "float32" and (arr.size == 0 or t.dtype.name not in ("int64", "bool")):
        extra.append(f"dtype={t.dtype!r}")  # an empty int64/bool one too: torch's repr
    if str(t.device) != "cpu":
        extra.append(f"device='{t.device}'")
    if t.grad_fn is not None:
        extra.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extra.append("requires_grad=True")
    if arr.ndim >= 3:  # the slices go below a header line, unindented
        head = ", ".join([f"shape={list(t.shape)}"] + extra)
        return f"tensor({head},\n{_body(arr)})"
    text = _body(arr).replace("\n", "\n       ")
    if arr.ndim == 0:  # torch's tensor(2.5000), not str's parenthesised (2.5000)
        text = text[1:-1]
    return "tensor(" + ", ".join([text] + extra) + ")"


@tensor_method("__repr__")
def _tensor_repr(self) -> str:
    return tensor_repr(self)


@tensor_method("__str__")
def _tensor_str(self) -> str:
    return tensor_str(self)
