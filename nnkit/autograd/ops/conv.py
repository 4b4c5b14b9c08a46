"""Convolution: ``conv1d``, ``conv2d`` (and ``conv3d``), as im2col + one GEMM, or for
3x3 stride-1 2-d convolutions with enough channels by Winograd F(4x4, 3x3).

Three bilinear Ops close under differentiation, so double backward works:

* :class:`ConvNd` ``y = conv(x, w) (+ b)``;
* :class:`ConvInputGrad` ``gx = conv_transpose(gy, w)`` (GEMM then col2im);
* :class:`ConvWeightGrad` ``gw = corr(x, gy)`` (GEMM against the im2col columns).

Columns are rows of channels-last windows, ``(G, N * prod(out), prod(kernel) * C/G)``,
so the forward GEMM yields a channels-last output (returned as an ``(N, O, *out)``
view) and the following relu / pool / conv keep streaming through that layout.

Winograd (:func:`use_winograd` says where; :mod:`nnkit.backends.winograd_kernels`
has the kernels): the same three Ops compute with the transformed input ``V``, kernel
``U`` and output gradient ``dM``: the forward as 36 GEMMs ``V U``, the input gradient
as ``dM Uᵀ`` through the input transform's adjoint (no col2im), the weight gradient as
``Vᵀ dM`` through the kernel transform's adjoint. ``V`` is kept from the forward for
the weight gradient (as the im2col columns are), and ``dM`` is made once per backward
for both gradients. It does 4 multiplications per output pixel where im2col does 9,
at the cost of float32 rounding ~30x larger (a few ``1e-6`` of the output's
magnitude; see the kernels' module); set :data:`WINOGRAD` to False to compute every
convolution by im2col.

Each one's backward is written with the other two (and :class:`ChannelSum` for the
bias).
"""

from __future__ import annotations

from typing import NamedTuple

from nnkit.autograd.function import NO_GRAPH, Op, ShapeError
from nnkit.autograd.ops._util import check_tensor

__all__ = ["conv1d", "conv2d", "conv3d"]


class ConvGeometry(NamedTuple):
    """Everything a convolution needs besides its tensors (per-dimension tuples)."""

    in_shape: tuple
    kernel: tuple
    stride: tuple
    dilation: tuple
    pads: tuple  # (lo, hi) per spatial dimension
    groups: int
    out: tuple
    winograd: bool = False  # computed by Winograd F(4x4, 3x3) (see use_winograd)

    def im2col(self, x):
        return x.conv_im2col(self.kernel, self.stride, self.dilation, self.pads, self.groups)


def _bmm(a, b):
    """Per-group product of ``(G, m, k)`` and ``(G, k, n)`` Mats (one 2-d GEMM when G=1)."""
    if a.shape[0] == 1:
        return a.getitem((0,)).matmul(b.getitem((0,))).reshape((1,) + (a.shape[1], b.shape[2]))
    return a.matmul(b)


def _w_cols(w, groups):
    """Weight ``(O, C/G, *k)`` as ``(G, prod(k) * C/G, O/G)``, matching the im2col columns."""
    nd = w.ndim - 2
    wg = w.reshape((groups, w.shape[0] // groups) + w.shape[1:])
    wg = wg.transpose((0,) + tuple(range(3, 3 + nd)) + (2, 1))
    return wg.reshape((groups, -1, w.shape[0] // groups))


def _w_from_cols(gw, geom, out_channels, in_per_group):
    """Inverse of :func:`_w_cols`: ``(G, prod(k) * Cg, Og)`` back to ``(O, Cg, *k)``."""
    nd = len(geom.kernel)
    g = gw.reshape((geom.groups,) + geom.kernel + (in_per_group, out_channels // geom.groups))
    g = g.transpose((0, nd + 2, nd + 1) + tuple(range(1, nd + 1)))
    return g.reshape((out_channels, in_per_group) + geom.kernel).contiguous()


def _rows(y, groups):
    """``(N, O, *out)`` as ``(G, N * prod(out), O/G)`` (a view for channels-last data)."""
    nd = y.ndim - 2
    r = y.transpose((0,) + tuple(range(2, 2 + nd)) + (1,))
    r = r.reshape((-1, groups, y.shape[1] // groups))
    return r.transpose((1, 0, 2))


def _from_rows(rows, n, out):
    """``(G, N * prod(out), O/G)`` back to an ``(N, O, *out)`` view (channels-last)."""
    g, m, og = rows.shape
    r = rows.transpose((1, 0, 2)).reshape((n,) + tuple(out) + (g * og,))
    return r.transpose((0, r.ndim - 1) + tuple(range(1, r.ndim - 1)))


class _Saved:
    """What a convolution's forward keeps for its backward: the input's columns (the
    im2col columns, or the Winograd transform ``V``), the kernel's Winograd transform
    ``u``, and ``dm``, the pair (output gradient, its Winograd transform) that the
    weight gradient computes and the input gradient then reuses (ConvNd's backward
    makes them in that order and frees each intermediate after its last use)."""

    __slots__ = ("cols", "u", "dm")

    def __init__(self):
        self.cols = self.u = self.dm = None


def _grad_transform(gy, saved, keep):
    """``dM = A dY Aᵀ`` of the output gradient ``gy``, made once per backward: kept in
    ``saved`` for the other gradient if ``keep``, else taken from it (and freed)."""
    if saved is not None and saved.dm is not None and saved.dm[0] is gy:
        dm = saved.dm[1]
    else:
        dm = gy.wino_output_adjoint()
    if saved is not None:
        saved.dm = (gy, dm) if keep else None
    return dm


class ConvNd(Op):
    @staticmethod
    def forward(ctx, x, w, b, geom):
        ctx.geom = geom
        ctx.save_for_backward(x, w)
        saved = ctx.saved = _Saved()
        keep = ctx.needs_input_grad[1:2] == (True,)  # the columns serve the weight gradient
        if geom.winograd:
            v = x.wino_input(geom.pads)
            u = w.wino_weight()
            if ctx.needs_input_grad[0:1] == (True,):
                saved.u = u
            if keep:
                saved.cols = v
            return v.matmul(u).wino_output(x.shape[0], geom.out, b)
        cols = geom.im2col(x)
        rows = _bmm(cols, _w_cols(w, geom.groups))  # (G, N * P, O/G)
        if b is not None:
            rows.iadd(b.reshape((geom.groups, 1, -1)))
        if keep:
            saved.cols = cols  # reused by the weight gradient: no second im2col
        return _from_rows(rows, x.shape[0], geom.out)

    @staticmethod
    def backward(ctx, grad_output):
        x, w = ctx.saved_tensors
        n, geom, saved = ctx.needs_input_grad, ctx.geom, ctx.__dict__.get("saved")
        gw = ConvWeightGrad.apply(x, grad_output, geom, saved) if n[1] else None
        if saved is not None:
            # the columns served their use: freed before the input gradient's buffers are
            # made (a second backward, retain_graph=True, computes them again)
            saved.cols = None
        gx = ConvInputGrad.apply(grad_output, w, geom, saved) if n[0] else None
        gb = ChannelSum.apply(grad_output) if n[2] else None
        if saved is not None:
            saved.dm = None  # (a second backward brings another gradient)
        return gx, gw, gb, None

    @staticmethod
    def backward_mat(ctx, g):
        x, w = ctx.saved_mats
        n, geom, saved = ctx.needs_input_grad, ctx.geom, ctx.__dict__.get("saved")
        # the same kernels in the same order as backward (see there)
        gw = ConvWeightGrad.forward(NO_GRAPH, x, g, geom, saved) if n[1] else None
        if saved is not None:
            saved.cols = None
        gx = ConvInputGrad.forward(NO_GRAPH, g, w, geom, saved) if n[0] else None
        gb = g.channel_sum() if n[2] else None  # as ChannelSum
        if saved is not None:
            saved.dm = None
        return gx, gw, gb, None


class ChannelSum(Op):
    """``gy`` summed over every axis but the channels: the gradient of the bias."""

    @staticmethod
    def forward(ctx, gy):
        ctx.shape = gy.shape
        return gy.channel_sum()

    @staticmethod
    def backward(ctx, grad_output):
        shape = ctx.shape
        return grad_output.reshape((1, -1) + (1,) * (len(shape) - 2)).expand(*shape)


class ConvInputGrad(Op):
    """``conv_transpose(gy, w)``: the gradient of a convolution wrt its input."""

    @staticmethod
    def forward(ctx, gy, w, geom, saved):
        ctx.geom = geom
        ctx.save_for_backward(gy, w)
        if geom.winograd:
            u = saved.u if saved is not None and saved.u is not None else w.wino_weight()
            dv = _grad_transform(gy, saved, False).matmul(u, tb=True)  # (36, T, C)
            return dv.wino_input_adjoint(geom.in_shape, geom.pads)
        cols = _bmm(_rows(gy, geom.groups), _w_cols(w, geom.groups).transpose((0, 2, 1)))
        return cols.conv_col2im(
            geom.in_shape, geom.out, geom.kernel, geom.stride, geom.dilation, geom.pads, geom.groups
        )

    @staticmethod
    def backward(ctx, grad_output):
        gy, w = ctx.saved_tensors
        n, geom = ctx.needs_input_grad, ctx.geom
        ggy = ConvNd.apply(grad_output, w, None, geom) if n[0] else None
        gw = ConvWeightGrad.apply(grad_output, gy, geom, None) if n[1] else None
        return ggy, gw, None, None


class ConvWeightGrad(Op):
    """``corr(x, gy)``: the gradient of a convolution wrt its weight."""

    @staticmethod
    def forward(ctx, x, gy, geom, saved):
        ctx.geom = geom
        ctx.save_for_backward(x, gy)
        cols = None if saved is None else saved.cols
        if geom.winograd:
            v = x.wino_input(geom.pads) if cols is None else cols
            return v.matmul(_grad_transform(gy, saved, True), ta=True).wino_weight_adjoint()
        cols = geom.im2col(x) if cols is None else cols
        gw = _bmm(cols.transpose((0, 2, 1)), _rows(gy, geom.groups))  # (G, K * Cg, Og)
        return _w_from_cols(gw, geom, gy.shape[1], x.shape[1] // geom.groups)

    @staticmethod
    def backward(ctx, grad_output):
        x, gy = ctx.saved_tensors
        n, geom = ctx.needs_input_grad, ctx.geom
        gx = ConvInputGrad.apply(gy, grad_output, geom, None) if n[0] else None
        ggy = ConvNd.apply(x, grad_output, None, geom) if n[1] else None
        return gx, ggy, None, None


# ------------------------------------------------------------------ algorithm
#: Set to False to compute every convolution as im2col + GEMM (tests compare the two).
WINOGRAD = True
#: The fewest input and output channels for which Winograd is used: measured with
#: benchmarks/bench_conv_algo.py, it is 1.1x to 3x faster than im2col + GEMM (a whole
#: training step of the convolution) from 4 channels on, but slower for first layers
#: of 1 to 3 input channels with many outputs (its output-side transforms cost more
#: than the few multiplications it saves there).
WINOGRAD_MIN_CHANNELS = 4


def use_winograd(in_shape, kernel, stride, dilation, groups, out_channels, dtype) -> bool:
    """Whether a convolution is computed by Winograd F(4x4, 3x3): 2-d, a 3x3 kernel,
    stride and dilation 1, one group, float32 or float64, at least
    :data:`WINOGRAD_MIN_CHANNELS` input and output channels (and :data:`WINOGRAD` on)."""
    return (
        WINOGRAD
        and kernel == (3, 3)
        and stride == (1, 1)
        and dilation == (1, 1)
        and groups == 1
        and min(in_shape[1], out_channels) >= WINOGRAD_MIN_CHANNELS
        and str(dtype) in ("float32", "float64")
    )


# ------------------------------------------------------------------ arguments
def _tuple(value, nd, name, op):
    if isinstance(value, int):
        return (value,) * nd
    value = tuple(value)
    if len(value) != nd or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{op}: {name} must be an int or a tuple of {nd} ints, got {value}")
    return value


def _pads(padding, nd, kernel, dilation, stride, op):
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding != "same":
            raise ValueError(
                f"{op}: padding must be an int, a tuple, 'same' or 'valid', got {padding!r}"
            )
        if any(s != 1 for s in stride):
            raise ValueError(
                f"{op}: padding='same' is not supported for strided convolutions (stride={stride})"
            )
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in total)  # extra on the right, as torch
    pads = _tuple(padding, nd, "padding", op)
    if any(p < 0 for p in pads):
        raise ValueError(f"{op}: padding must be non-negative, got {padding}")
    return tuple((p, p) for p in pads)


_LAYOUT = {1: "(C, L)", 2: "(C, H, W)", 3: "(C, D, H, W)"}


def _geometry(input, weight, bias, stride, padding, dilation, groups, nd, op, shown):
    """The convolution's geometry; ``shown`` is the input shape the user gave."""
    check_tensor(weight, op, "weight")
    if input.ndim != nd + 2:
        raise ShapeError(
            f"{op}: expected input with {nd + 1} dimensions {_LAYOUT[nd]} (unbatched) or "
            f"{nd + 2} (N, {_LAYOUT[nd][1:]} (batched), got shape {tuple(input.shape)}"
        )
    if weight.ndim != nd + 2:
        raise ShapeError(
            f"{op}: expected weight with {nd + 2} dimensions (out_channels, "
            f"in_channels/groups, *kernel), got shape {tuple(weight.shape)}"
        )
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups}")
    c, o = input.shape[1], weight.shape[0]
    if c % groups or o % groups:
        raise ValueError(
            f"{op}: in_channels ({c}) and out_channels ({o}) must both be "
            f"divisible by groups ({groups})"
        )
    if weight.shape[1] * groups != c:
        raise ShapeError(
            f"{op}: input has {c} channels but weight expects "
            f"{weight.shape[1] * groups} (groups={groups}); weight shape "
            f"{tuple(weight.shape)}, input shape {shown}"
        )
    if bias is not None and tuple(bias.shape) != (o,):
        raise ShapeError(f"{op}: bias must have shape ({o},), got {tuple(bias.shape)}")
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != input.dtype):
        raise RuntimeError(
            f"{op}: input, weight and bias must share a dtype, got "
            f"{input.dtype}, {weight.dtype}" + ("" if bias is None else f", {bias.dtype}")
        )
    kernel = tuple(weight.shape[2:])
    stride = _tuple(stride, nd, "stride", op)
    dilation = _tuple(dilation, nd, "dilation", op)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ValueError(
            f"{op}: stride and dilation must be positive, got stride={stride}, dilation={dilation}"
        )
    pads = _pads(padding, nd, kernel, dilation, stride, op)
    out = tuple(
        (s + lo + hi - d * (k - 1) - 1) // t + 1
        for s, (lo, hi), k, t, d in zip(input.shape[2:], pads, kernel, stride, dilation)
    )
    if any(v < 1 for v in out):
        raise ShapeError(
            f"{op}: the (padded) input {shown} is smaller than the "
            f"(dilated) kernel {kernel}; output size would be {out}"
        )
    wino = use_winograd(tuple(input.shape), kernel, stride, dilation, groups, o, input.dtype)
    return ConvGeometry(tuple(input.shape), kernel, stride, dilation, pads, groups, out, wino)


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, op):
    shown = tuple(check_tensor(input, op).shape)
    unbatched = input.ndim == nd + 1  # (C, *spatial): PyTorch accepts it, so does nnkit
    x = input.unsqueeze(0) if unbatched else input
    geom = _geometry(x, weight, bias, stride, padding, dilation, groups, nd, op, shown)
    out = ConvNd.apply(x, weight, bias, geom)
    return out.squeeze(0) if unbatched else out


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation over an ``(N, C, H, W)`` input (``torch.nn.functional.conv2d``).

    .. math::
        y[n, o, i, j] = b[o] + \\sum_{c, p, q} w[o, c, p, q]\\,
            x_{pad}[n, g(o) C_g + c, i s_0 + p d_0, j s_1 + q d_1]

    Computed as im2col (a strided view and one copy) followed by a single GEMM per
    group; backward uses a GEMM and col2im for the input, a GEMM against the saved
    columns for the weight (double backward works). A 3x3 kernel with stride 1,
    dilation 1, one group and at least 4 input and output channels (float32/64) is
    computed by Winograd F(4x4, 3x3) instead (forward and both gradients): 36 GEMMs
    over 6x6 tiles transformed by small matrices, about twice as fast, with float32
    rounding errors up to ~1e-5 of the output's magnitude (im2col's: ~4e-7).

    An unbatched input (no ``N``) gives an unbatched output, as in PyTorch.

    Args:
        input: ``(N, C, H, W)``, or unbatched ``(C, H, W)``.
        weight: ``(O, C / groups, kH, kW)``.
        bias: optional ``(O,)``.
        stride: an int or one int per spatial dimension (default 1).
        padding: an int or one int per spatial dimension (zeros on both sides),
            ``'valid'`` (none) or ``'same'`` (output as large as the input; stride 1
            only; an odd total goes to the right/bottom, as in PyTorch).
        dilation: an int or one int per spatial dimension: spacing between kernel
            elements (default 1).
        groups: split the channels into this many independent convolutions; it must
            divide both ``C`` and ``O`` (default 1).

    Returns:
        ``(N, O, H_out, W_out)`` (``(O, H_out, W_out)`` unbatched) with
        ``H_out = (H + 2 pH - dH (kH - 1) - 1) // sH + 1``.

    Raises:
        ShapeError: if the input is not 3-d or 4-d, the channels do not match the weight, or
            the kernel does not fit.
        RuntimeError: if ``input``, ``weight`` and ``bias`` differ in dtype.

    Example:
        >>> x = nnkit.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.conv2d(x, nnkit.ones(1, 1, 2, 2), stride=2)[0, 0]
        tensor([[10.0, 18.0],
                [42.0, 50.0]])
        >>> F.conv2d(nnkit.randn(8, 3, 28, 28), nnkit.randn(16, 3, 3, 3), padding=1).shape
        (8, 16, 28, 28)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation over an ``(N, C, L)`` input:
    ``y[n, o, i] = b[o] + sum_{c, k} w[o, c, k] x_pad[n, g(o) C_g + c, i s + k d]``.

    See :func:`conv2d` for the method.
    An unbatched input (no ``N``) gives an unbatched output, as in PyTorch.

    Args:
        input: ``(N, C, L)``, or unbatched ``(C, L)``.
        weight: ``(O, C / groups, k)``.
        bias: optional ``(O,)``.
        stride: an int or one int per spatial dimension (default 1).
        padding: an int or one int per spatial dimension (zeros on both sides),
            ``'valid'`` (none) or ``'same'`` (output as large as the input; stride 1
            only; an odd total goes to the right/bottom, as in PyTorch).
        dilation: an int or one int per spatial dimension: spacing between kernel
            elements (default 1).
        groups: split the channels into this many independent convolutions; it must
            divide both ``C`` and ``O`` (default 1).

    Returns:
        ``(N, O, L_out)`` (``(O, L_out)`` unbatched) with
        ``L_out = (L + 2 p - d (k - 1) - 1) // s + 1``.

    Raises:
        ShapeError: if the input is not 2-d or 3-d, the channels do not match the weight, or
            the kernel does not fit.
        RuntimeError: if ``input``, ``weight`` and ``bias`` differ in dtype.

    Example:
        >>> x = nnkit.tensor([[[1.0, 2.0, 4.0, 7.0]]])
        >>> F.conv1d(x, nnkit.tensor([[[-1.0, 1.0]]])).flatten()
        tensor([1.0, 2.0, 3.0])
        >>> F.conv1d(x, nnkit.tensor([[[-1.0, 1.0]]]), padding="same").flatten()
        tensor([ 1.0,  2.0,  3.0, -7.0])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d cross-correlation over an ``(N, C, D, H, W)`` input (volumes, video).

    See :func:`conv2d` for the formula and method.
    An unbatched input (no ``N``) gives an unbatched output, as in PyTorch.

    Args:
        input: ``(N, C, D, H, W)``, or unbatched ``(C, D, H, W)``.
        weight: ``(O, C / groups, kD, kH, kW)``.
        bias: optional ``(O,)``.
        stride: an int or one int per spatial dimension (default 1).
        padding: an int or one int per spatial dimension (zeros on both sides),
            ``'valid'`` (none) or ``'same'`` (output as large as the input; stride 1
            only; an odd total goes to the right/bottom, as in PyTorch).
        dilation: an int or one int per spatial dimension: spacing between kernel
            elements (default 1).
        groups: split the channels into this many independent convolutions; it must
            divide both ``C`` and ``O`` (default 1).

    Returns:
        ``(N, O, D_out, H_out, W_out)`` (no ``N`` unbatched), each size as in :func:`conv2d`.

    Raises:
        ShapeError: if the input is not 4-d or 5-d, the channels do not match the weight, or
            the kernel does not fit.
        RuntimeError: if ``input``, ``weight`` and ``bias`` differ in dtype.

    Example:
        >>> F.conv3d(nnkit.ones(1, 2, 3, 3, 3), nnkit.ones(4, 2, 2, 2, 2)).shape
        (1, 4, 2, 2, 2)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")
