"""Products of issue 13: mv, addmm, addmv, baddbmm, vdot, tensordot, kron, cross, einsum.

All are compositions of differentiable ops (permute, reshape, matmul, sum, diagonal),
so gradients (and gradients of gradients) follow. Re-exported by ``ops/shaping.py``.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import ShapeError
from nnkit.autograd.ops._util import _dims, _int, check_tensor, wrap_dim
from nnkit.autograd.ops.diagonals import diagonal
from nnkit.autograd.ops.indexing import getitem
from nnkit.autograd.ops.joining import stack
from nnkit.autograd.ops.linalg import dot, matmul
from nnkit.autograd.ops.shape import broadcast_shapes, expand, permute, reshape
from nnkit.autograd.tensor import Tensor

__all__ = ["addmm", "addmv", "baddbmm", "mv", "vdot", "tensordot", "kron", "cross", "einsum"]


# ------------------------------------------------------------------- products
def _check_dtypes(op, *xs):
    for x in xs[1:]:
        if x.dtype != xs[0].dtype:
            raise RuntimeError(
                f"{op}: expected all tensors to have the same dtype, got "
                f"{xs[0].dtype} and {x.dtype}"
            )


def _scaled_sum(op, input, prod, beta, alpha):
    """``beta * input + alpha * prod`` (``input`` ignored, nan and all, when beta is 0)."""
    if tuple(broadcast_shapes(input.shape, prod.shape)) != tuple(prod.shape):
        raise ShapeError(
            f"{op}: input of shape {tuple(input.shape)} does not broadcast to "
            f"the product's shape {tuple(prod.shape)}"
        )
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)


def _inner(op, a, b):
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ShapeError(
            f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
            "multiplied (inner sizes differ)"
        )


def _need(op, x, nd, name):
    check_tensor(x, op, name)
    if x.ndim != nd:
        raise ShapeError(
            f"{op}: argument '{name}' must be a {nd}-d tensor, got shape {tuple(x.shape)}"
        )


def mv(input, vec):
    """Matrix-vector product: ``out[i] = sum_j input[i, j] * vec[j]``.

    Args:
        input: a 2-d tensor of shape ``(n, m)``.
        vec: a 1-d tensor of shape ``(m,)`` and the same dtype.

    Returns:
        A 1-d tensor of shape ``(n,)``.

    Gradient: ``outer(g, vec)`` for ``input`` and ``input.T @ g`` for ``vec`` (through
    :func:`matmul`).

    Raises:
        ShapeError: if ``input`` is not 2-d, ``vec`` not 1-d or the inner sizes differ.
        RuntimeError: if the dtypes differ (as PyTorch).

    Example:
        >>> m = nnkit.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> nnkit.mv(m, nnkit.tensor([1.0, 0.0, -1.0]))
        tensor([-2.0, -2.0])
    """
    _need("mv", input, 2, "input")
    _need("mv", vec, 1, "vec")
    _check_dtypes("mv", input, vec)
    _inner("mv", input, vec)
    return matmul(input, vec)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices.

    Args:
        input: a tensor that broadcasts to the product's shape ``(n, p)``.
        mat1: a 2-d tensor ``(n, m)``.
        mat2: a 2-d tensor ``(m, p)`` of ``mat1``'s dtype.
        beta: the scale of ``input`` (keyword-only, default 1); with ``beta=0`` ``input``
            is ignored, NaN and inf included (as in PyTorch).
        alpha: the scale of the product (keyword-only, default 1).

    Returns:
        A tensor of shape ``(n, p)``. Unlike PyTorch, ``input`` of another dtype is
        promoted rather than refused.

    Gradient: ``beta * g`` (summed to ``input``'s shape), ``alpha * g @ mat2.T`` and
    ``alpha * mat1.T @ g``.

    Raises:
        ShapeError: for non-matrix factors, inner sizes that differ or an ``input`` that
            does not broadcast to the product's shape.
        RuntimeError: if ``mat1`` and ``mat2`` have different dtypes.

    Example:
        >>> a = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nnkit.addmm(nnkit.tensor([10.0, 20.0]), a, a, beta=0.5, alpha=2)
        tensor([[19.0, 30.0],
                [35.0, 54.0]])
    """
    check_tensor(input, "addmm")
    _need("addmm", mat1, 2, "mat1")
    _need("addmm", mat2, 2, "mat2")
    _check_dtypes("addmm", mat1, mat2)
    _inner("addmm", mat1, mat2)
    return _scaled_sum("addmm", input, matmul(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``, a matrix-vector product plus a vector.

    Args:
        input: a tensor that broadcasts to the product's shape ``(n,)``.
        mat: a 2-d tensor ``(n, m)``.
        vec: a 1-d tensor ``(m,)`` of ``mat``'s dtype.
        beta: the scale of ``input`` (keyword-only, default 1; 0 ignores ``input``).
        alpha: the scale of the product (keyword-only, default 1).

    Returns:
        A 1-d tensor of shape ``(n,)``.

    Gradient: ``beta * g`` for ``input``; ``alpha`` times :func:`mv`'s gradients.

    Raises:
        ShapeError: for wrong ranks, inner sizes that differ or an ``input`` that does not
            broadcast to ``(n,)``.
        RuntimeError: if ``mat`` and ``vec`` have different dtypes.

    Example:
        >>> m = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nnkit.addmv(nnkit.tensor([1.0, 1.0]), m, nnkit.tensor([1.0, 1.0]), beta=2)
        tensor([5.0, 9.0])
    """
    check_tensor(input, "addmv")
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``: batched matrix products plus a tensor.

    Args:
        input: a tensor that broadcasts to the product's shape ``(b, n, p)``.
        batch1: a 3-d tensor ``(b, n, m)``.
        batch2: a 3-d tensor ``(b, m, p)`` of ``batch1``'s dtype.
        beta: the scale of ``input`` (keyword-only, default 1; 0 ignores ``input``).
        alpha: the scale of the products (keyword-only, default 1).

    Returns:
        A tensor of shape ``(b, n, p)``.

    Gradient: ``beta * g`` for ``input``; ``alpha * g @ batch2^T`` and
    ``alpha * batch1^T @ g`` per batch.

    Raises:
        ShapeError: for non-3-d batches, different batch sizes, inner sizes that differ or
            an ``input`` that does not broadcast.
        RuntimeError: if ``batch1`` and ``batch2`` have different dtypes.

    Example:
        >>> b1 = nnkit.ones(2, 1, 3)
        >>> b2 = nnkit.ones(2, 3, 1)
        >>> nnkit.baddbmm(nnkit.tensor(1.0), b1, b2, alpha=0.5).flatten()
        tensor([2.5000, 2.5000])
    """
    check_tensor(input, "baddbmm")
    _need("baddbmm", batch1, 3, "batch1")
    _need("baddbmm", batch2, 3, "batch2")
    _check_dtypes("baddbmm", batch1, batch2)
    _inner("baddbmm", batch1, batch2)
    if batch1.shape[0] != batch2.shape[0]:
        raise ShapeError(
            f"baddbmm: batch1 and batch2 must have the same batch size, got "
            f"{tuple(batch1.shape)} and {tuple(batch2.shape)}"
        )
    return _scaled_sum("baddbmm", input, matmul(batch1, batch2), beta, alpha)


def vdot(input, other):
    """Dot product of two 1-d tensors, ``sum_i conj(input[i]) * other[i]``.

    nnkit tensors are real, so this is :func:`dot`.

    Args:
        input: a 1-d tensor.
        other: a 1-d tensor of the same size and dtype.

    Returns:
        A 0-d tensor.

    Gradient: ``g * other`` for ``input`` and ``g * input`` for ``other``.

    Raises:
        ShapeError: if either is not 1-d or the sizes differ.
        RuntimeError: if the dtypes differ.

    Example:
        >>> nnkit.vdot(nnkit.tensor([1.0, 2.0]), nnkit.tensor([3.0, 4.0]))
        tensor(11.0)
    """
    _need("vdot", input, 1, "input")
    _need("vdot", other, 1, "other")
    _check_dtypes("vdot", input, other)
    if input.shape != other.shape:
        raise ShapeError(
            f"vdot: inconsistent tensor size, expected tensor [{input.shape[0]}] "
            f"and src [{other.shape[0]}] to have the same number of elements"
        )
    return dot(input, other)


def _contract(a, b, ca, cb):
    """``a`` and ``b`` contracted over dims ``ca`` of ``a`` with ``cb`` of ``b`` (free dims
    of ``a`` then of ``b``), as one matmul."""
    fa = [k for k in range(a.ndim) if k not in ca]
    fb = [k for k in range(b.ndim) if k not in cb]
    sa, sb = [a.shape[k] for k in fa], [b.shape[k] for k in fb]
    k = math.prod(a.shape[d] for d in ca)
    a2 = reshape(permute(a, tuple(fa) + tuple(ca)), (math.prod(sa), k))
    b2 = reshape(permute(b, tuple(cb) + tuple(fb)), (k, math.prod(sb)))
    return reshape(matmul(a2, b2), tuple(sa + sb))


def tensordot(a, b, dims=2):
    """Tensor contraction: sums of products of ``a`` and ``b`` over the dimensions ``dims``.

    Computed as one :func:`matmul` after a permute and reshape of each operand.

    Args:
        a: a tensor.
        b: a tensor of ``a``'s dtype.
        dims: an int ``n`` (default 2): contract the last ``n`` dimensions of ``a`` with the
            first ``n`` of ``b``; or a pair of dim lists ``([da...], [db...])`` contracted
            pairwise (negative dims count from the end).

    Returns:
        A tensor with ``a``'s free dimensions followed by ``b``'s.

    Gradient: the contraction of ``g`` with the other operand (through :func:`matmul`).

    Raises:
        RuntimeError: for a negative ``dims``, lists of different lengths or contracted
            sizes that differ.

    Example:
        >>> a = nnkit.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> nnkit.tensordot(a, a, dims=([1], [1]))
        tensor([[14.0, 32.0],
                [32.0, 77.0]])
    """
    check_tensor(a, "tensordot", "a")
    check_tensor(b, "tensordot", "b")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError(f"tensordot: dims must be an int or a pair of dim lists, got {dims}")
        da, db = _dims(dims[0], "tensordot", "dims"), _dims(dims[1], "tensordot", "dims")
    else:
        n = _int(dims, "tensordot", "dims")
        if n < 0:
            raise RuntimeError(f"tensordot: expects dims >= 0, but got dims={n}")
        if n > min(a.ndim, b.ndim):
            raise RuntimeError(
                f"tensordot: dims {n} exceeds the dimensions of a ({a.ndim}) or b ({b.ndim})"
            )
        da, db = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    if len(da) != len(db):
        raise RuntimeError(
            f"tensordot: both dimension lists should have the same length, got {da} and {db}"
        )
    da = tuple(wrap_dim(d, a.ndim, "tensordot") for d in da)
    db = tuple(wrap_dim(d, b.ndim, "tensordot") for d in db)
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(
                f"tensordot: contracted dimensions need to match, but first has "
                f"size {a.shape[x]} in dim {x} and second has size "
                f"{b.shape[y]} in dim {y}"
            )
    _check_dtypes("tensordot", a, b)
    return _contract(a, b, da, db)


def kron(input, other):
    """Kronecker product: the blocks ``input[i, j, ...] * other`` laid out side by side.

    Args:
        input: a tensor.
        other: a tensor; the one with fewer dimensions is padded with leading 1s.

    Returns:
        A tensor of shape ``input.shape[k] * other.shape[k]`` in each dimension ``k``,
        of the promoted dtype.

    Gradient: through a broadcast product and reshapes, so exact for both operands.

    Example:
        >>> nnkit.kron(nnkit.tensor([1, 2]), nnkit.tensor([1, 10, 100]))
        tensor([  1,  10, 100,   2,  20, 200])
    """
    check_tensor(input, "kron")
    check_tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = reshape(input, tuple(x for n in sa for x in (n, 1)))
    b = reshape(other, tuple(x for n in sb for x in (1, n)))
    return reshape(a * b, tuple(x * y for x, y in zip(sa, sb)))


def cross(input, other, dim=None):
    """Cross product of 3-vectors along ``dim``: ``(a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)``.

    Args:
        input: a tensor with size 3 along ``dim``.
        other: a tensor that broadcasts with ``input``.
        dim: the dimension of the vectors. None (default) takes the first dimension of size
            3, as PyTorch's ``torch.cross`` (without its deprecation warning; note that
            ``torch.linalg.cross`` defaults to ``dim=-1`` instead).

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``cross(other, g)`` for ``input`` and ``cross(g, input)`` for ``other``.

    Raises:
        RuntimeError: if the dimension does not have size 3 (or none has, for None).

    Example:
        >>> nnkit.cross(nnkit.tensor([1.0, 0.0, 0.0]), nnkit.tensor([0.0, 1.0, 0.0]))
        tensor([0.0, 0.0, 1.0])
    """
    check_tensor(input, "cross")
    check_tensor(other, "cross", "other")
    shape = tuple(broadcast_shapes(input.shape, other.shape))
    a, b = expand(input, shape), expand(other, shape)
    if dim is None:
        d = next((k for k, n in enumerate(shape) if n == 3), None)
        if d is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape {shape}")
    else:
        d = wrap_dim(dim, len(shape), "cross")
        if shape[d] != 3:
            raise RuntimeError(
                f"cross: inputs dimension {dim} must have length 3, got "
                f"shapes {tuple(input.shape)} and {tuple(other.shape)}"
            )
    pre = (slice(None),) * d
    a0, a1, a2 = (getitem(a, pre + (k,)) for k in range(3))
    b0, b1, b2 = (getitem(b, pre + (k,)) for k in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _parse_term(term, x, k):
    """The labels of operand ``k`` (letters; ``...`` as the ints ``0..e-1``, right-aligned
    later) and how many dims its ellipsis covers."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise ValueError(f"einsum: invalid ellipsis in subscripts '{term}' of operand {k}")
    letters = term.replace("...", "")
    for ch in letters:
        if not ch.isascii() or not ch.isalpha():
            raise ValueError(
                f"einsum: invalid subscript '{ch}' in subscripts '{term}' of "
                f"operand {k} (letters a-z, A-Z only)"
            )
    if "..." not in term:
        if len(letters) != x.ndim:
            raise ShapeError(
                f"einsum: the number of subscripts in '{term}' ({len(letters)}) "
                f"does not match the number of dimensions ({x.ndim}) of operand "
                f"{k} and no ellipsis was given"
            )
        return list(letters), 0
    e = x.ndim - len(letters)
    if e < 0:
        raise ShapeError(
            f"einsum: the number of subscripts in '{term}' ({len(letters)}) is "
            f"more than the number of dimensions ({x.ndim}) of operand {k}"
        )
    head, tail = term.split("...")
    return list(head) + [("...", j) for j in range(e)] + list(tail), e


def _take_diagonals(x, labels, k):
    """``x`` with each repeated label of one operand reduced to its diagonal."""
    while len(set(labels)) != len(labels):
        lab = next(a for a in labels if labels.count(a) > 1)
        p = labels.index(lab)
        q = labels.index(lab, p + 1)
        if x.shape[p] != x.shape[q]:
            raise ShapeError(
                f"einsum: subscript {lab} is repeated for operand {k} but the "
                f"sizes don't match, {x.shape[p]} != {x.shape[q]}"
            )
        x = diagonal(x, 0, p, q)
        labels = [a for j, a in enumerate(labels) if j not in (p, q)] + [lab]
    return x, labels


def _sum_labels(x, labels, drop):
    dims = tuple(j for j, a in enumerate(labels) if a in drop)
    if not dims:
        return x, labels
    return x.sum(dims), [a for a in labels if a not in drop]


def _pair(a, la, b, lb, keep):
    """Operands ``a`` (labels ``la``) and ``b`` (``lb``) multiplied and summed over the
    labels they share that ``keep`` lacks, as one broadcasting matmul."""
    size = dict(zip(lb, b.shape))
    size_a = dict(zip(la, a.shape))
    shared = [c for c in la if c in lb]
    # A shared label summed over but broadcast (size 1 on one side): sum each side alone.
    for c in [c for c in shared if c not in keep and size_a[c] != size[c]]:
        a, la = _sum_labels(a, la, {c})
        b, lb = _sum_labels(b, lb, {c})
        shared.remove(c)
    size_a, size = dict(zip(la, a.shape)), dict(zip(lb, b.shape))
    batch = [c for c in shared if c in keep]
    con = [c for c in shared if c not in keep]
    fa = [c for c in la if c not in shared]
    fb = [c for c in lb if c not in shared]
    a = permute(a, tuple(la.index(c) for c in batch + fa + con))
    b = permute(b, tuple(lb.index(c) for c in batch + con + fb))
    bat_a, bat_b = [size_a[c] for c in batch], [size[c] for c in batch]
    pa, pc = math.prod(size_a[c] for c in fa), math.prod(size_a[c] for c in con)
    pb = math.prod(size[c] for c in fb)
    out = matmul(reshape(a, tuple(bat_a) + (pa, pc)), reshape(b, tuple(bat_b) + (pc, pb)))
    shape = tuple(max(m, n) if 0 not in (m, n) else 0 for m, n in zip(bat_a, bat_b))
    shape += tuple(size_a[c] for c in fa) + tuple(size[c] for c in fb)
    return reshape(out, shape), batch + fa + fb


def einsum(equation, *operands):
    """Einstein summation: sums of products of ``operands`` over the labels of ``equation``.

    NumPy/PyTorch subscripts: ``'ij,jk->ik'`` (matmul), ``'ii->i'`` (diagonal), ``'ii'``
    (trace), ``'bij,bjk'``, ``'...ij,...jk->...ik'``. Without ``->`` the output holds the
    labels that appear once, in alphabetical order (after the ellipsis dims). A label
    repeated within one operand takes its diagonal; size-1 dims broadcast. Computed as
    diagonals, sums, permutes and matmuls, left to right (no path optimisation).

    Args:
        equation: the subscripts (letters ``a-z``, ``A-Z``, at most one ``...`` per term;
            spaces are ignored).
        *operands: the tensors, one per term (or a single list of them), of one dtype.

    Returns:
        A tensor with the output labels' sizes.

    Gradient: through the composed ops, so gradients (and double backward) follow.

    Raises:
        ValueError: for malformed subscripts or a wrong number of operands.
        ShapeError: for subscripts that do not match the operands' shapes.
        TypeError: if the equation is not a str.
        RuntimeError: if the operands' dtypes differ.

    Example:
        >>> a = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nnkit.einsum("ij,jk->ik", a, a)
        tensor([[ 7.0, 10.0],
                [15.0, 22.0]])
        >>> nnkit.einsum("ii", a)
        tensor(5.0)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a str, got {type(equation).__name__}")
    for k, x in enumerate(operands):
        check_tensor(x, "einsum", f"operands[{k}]")
    if operands:
        _check_dtypes("einsum", *operands)
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not operands or len(terms) != len(operands):
        raise ValueError(
            f"einsum: the equation '{equation}' names {len(terms)} operand(s), got {len(operands)}"
        )
    parsed = [_parse_term(term, x, k) for k, (term, x) in enumerate(zip(terms, operands))]
    ell = max(e for _, e in parsed)
    labels = []  # ellipsis labels renumbered so that they right-align across operands
    for lab, e in parsed:
        labels.append([("...", c[1] + ell - e) if isinstance(c, tuple) else c for c in lab])
    ell_labels = [("...", j) for j in range(ell)]
    if arrow:
        if rhs.count("...") > 1:
            raise ValueError(f"einsum: more than one ellipsis in the output '{rhs}'")
        out = [c for c in rhs.replace("...", "")]
        for c in out:
            if not any(c in lab for lab in labels):
                raise ValueError(
                    f"einsum: output subscript {c} does not appear in the "
                    "equation for any input operand"
                )
            if out.count(c) > 1:
                raise ValueError(
                    f"einsum: output subscript {c} appears more than once in the output"
                )
        if "..." in rhs:
            head, tail = rhs.split("...")
            out = list(head) + ell_labels + list(tail)
    else:
        counts = {}
        for lab in labels:
            for c in lab:
                if isinstance(c, str):
                    counts[c] = counts.get(c, 0) + 1
        out = ell_labels + sorted(c for c, n in counts.items() if n == 1)
    sizes = {}
    for k, (lab, x) in enumerate(zip(labels, operands)):
        for c, n in zip(lab, x.shape):
            if n != 1 and sizes.setdefault(c, n) != n:
                name = "..." if isinstance(c, tuple) else c
                raise ShapeError(
                    f"einsum: operands do not broadcast: subscript {name} has "
                    f"size {sizes[c]} and {n} (operand {k})"
                )
    xs, labs = [], []
    for k, (x, lab) in enumerate(zip(operands, labels)):
        x, lab = _take_diagonals(x, lab, k)
        xs.append(x)
        labs.append(lab)
    x, lab = xs[0], labs[0]
    for k in range(len(xs)):
        if k:
            later = set(out).union(*[set(m) for m in labs[k + 1 :]])
            y, ly = _sum_labels(xs[k], labs[k], set(labs[k]) - later - set(lab))
            x, lab = _pair(x, lab, y, ly, later)
        later = set(out).union(*[set(m) for m in labs[k + 1 :]])
        x, lab = _sum_labels(x, lab, set(lab) - later)
    # A broadcast output label may still be size 1 here where another operand had n.
    x = permute(x, tuple(lab.index(c) for c in out)) if x.ndim else x
    want = tuple(sizes.get(c, x.shape[j]) for j, c in enumerate(out))
    return expand(x, want) if tuple(x.shape) != want else x
