"""What the fused recurrent kernels (:mod:`nnkit.backends.rnn_kernels`,
:mod:`nnkit.backends.rnn_lstm`, :mod:`nnkit.backends.rnn_gru`) share: a bounded pool of
free NumPy work buffers, the :class:`RNNCache` a forward hands to its backward (which
owns buffers from the pool), and the splitting of per-step GEMMs into row blocks of the
batch.
"""

from __future__ import annotations

import numpy as np

from nnkit.backends.blas_info import openblas_core

__all__ = ["RNNCache", "row_blocks_pay"]

# Free NumPy work buffers by (shape, dtype): the backward's (used and given back within
# one call) and the forward's that an RNNCache owns (given back when it dies or hands
# them on, see RNNCache); no result ever views them. Memory the C allocator hands back
# to the system costs page faults when it is taken again, a noticeable part of a small
# LSTM step. Bounded: arrays up to _POOL_ARRAY_BYTES, _POOL_BYTES in all. CuPy keeps
# its own memory pool.
_POOL: dict = {}
_POOL_ARRAY_BYTES = 16 << 20
_POOL_BYTES = 64 << 20
_pooled_bytes = [0]


def _empty(xp, shape, dt):
    """An uninitialised array, from the free buffers where one fits."""
    if xp is np:
        free = _POOL.get((shape, dt.str))
        if free:
            try:
                a = free.pop()
            except IndexError:  # another thread took it
                pass
            else:
                _pooled_bytes[0] -= a.nbytes
                return a
    return xp.empty(shape, dt)


def _give_back(*arrays) -> None:
    """Keep ``arrays`` (no longer referenced elsewhere) for a later :func:`_empty`."""
    for a in arrays:
        if type(a) is not np.ndarray:  # (None, another module's array or a subclass)
            continue
        n = a.nbytes
        if n <= _POOL_ARRAY_BYTES and _pooled_bytes[0] + n <= _POOL_BYTES:
            _POOL.setdefault((a.shape, a.dtype.str), []).append(a)
            _pooled_bytes[0] += n


class _Buffers:
    """Work arrays taken from the free buffers that one :class:`RNNCache` owns."""

    __slots__ = ("arrays", "owner")

    def __init__(self, *arrays) -> None:
        self.arrays, self.owner = arrays, None


class RNNCache:
    """What the backward needs besides the inputs and the output sequence.

    ``gates``: the gate activations (LSTM ``(T, 4, B, H)``, GRU ``(T, 3, B, H)``, see
    :func:`~nnkit.backends.rnn_lstm.lstm_forward` and
    :func:`~nnkit.backends.rnn_gru.gru_forward`; RNN the outputs ``(T, B, H)``);
    ``cells`` and ``tanh_c``: LSTM's cell states ``(T + 1, B, H)`` and their tanh
    ``(T, B, H)``; ``states``: LSTM's and GRU's hidden states ``(T + 1, B, H)`` (the
    output sequence views them); ``x_in``: their inputs with a column of ones
    ``(T·B, I + 1)``; ``rec``: GRU's ``h @ W_hnᵀ + b_hn`` ``(T, B, H)``.

    The arrays listed in ``buffers`` came from the free buffers and go back there when
    the cache dies (after the backward, which reads them, once the graph is freed) or
    when another cache's replace them (a replay of ``nnkit.compile`` refills the
    recorded cache with the new call's arrays, ``buffers`` last): the cache that holds
    a ``_Buffers`` last owns it. No result of the kernels views them.
    """

    __slots__ = (
        "mode", "reverse", "gates", "cells", "tanh_c", "rec", "states", "x_in", "buffers",
    )  # fmt: skip

    def __init__(self, mode, reverse, gates, cells=None, tanh_c=None, rec=None, states=None,
                 x_in=None, buffers=None) -> None:  # fmt: skip
        self.mode, self.reverse, self.gates, self.cells = mode, reverse, gates, cells
        self.tanh_c, self.rec, self.states, self.x_in = tanh_c, rec, states, x_in
        self.buffers = buffers

    def __setattr__(self, name, value) -> None:
        if name != "buffers":
            object.__setattr__(self, name, value)
            return
        old = getattr(self, "buffers", None)
        if value is not None:
            value.owner = id(self)
        object.__setattr__(self, name, value)
        if old is not None and old is not value:
            self._release(old)

    def _release(self, buffers, give_back=None) -> None:
        if buffers.owner == id(self):
            arrays, buffers.arrays, buffers.owner = buffers.arrays, (), None
            (give_back or _give_back)(*arrays)

    def __del__(self, _give_back=_give_back) -> None:
        buffers = getattr(self, "buffers", None)
        if buffers is not None:
            try:
                self._release(buffers, _give_back)
            except Exception:  # interpreter shutdown: the pool may be gone already
                pass


# Multiply-adds up to which OpenBLAS runs a GEMM with its small-matrix kernel, which
# reads the operands in place: a larger per-step GEMM packs the weights at every call,
# so it is cut into row blocks of the batch that stay under this (for batch 64, hidden
# 128: about 20 % faster for LSTM's and GRU's, 15 % for RNN's; blocks of fewer than 8
# rows would be slower). Only where NumPy's OpenBLAS runs kernels that have one (see
# :func:`row_blocks_pay`): elsewhere (Haswell or Zen kernels) the blocks cost ~10 %.
_SMALL_GEMM = 1_000_000

# OpenBLAS's kernel families with small-matrix GEMM kernels for x86-64 (AVX-512)
_SMALL_KERNEL_CORES = ("skylakex", "cooperlake", "sapphirerapids")
_ROW_BLOCKS: list = []  # [whether row blocks pay], found at the first call


def row_blocks_pay(core: str | None = None) -> bool:
    """Whether per-step GEMMs are cut into row blocks for the small-matrix kernel: on
    OpenBLAS's AVX-512 kernel families (``core``, default: the one running here)."""
    if core is not None:
        return core.lower() in _SMALL_KERNEL_CORES
    if not _ROW_BLOCKS:
        _ROW_BLOCKS.append(row_blocks_pay(openblas_core() or ""))
    return _ROW_BLOCKS[0]


def _small_blocks(xp, batch, k, n):
    """How many row blocks of the batch bring a GEMM ``(batch, k) @ (k, n)`` under
    :data:`_SMALL_GEMM` (1: it is already), or None where no blocks of 8 rows or more
    dividing the batch do, or row blocks do not pay here (or the arrays are not
    NumPy's)."""
    if xp is not np:
        return None
    if batch * k * n <= _SMALL_GEMM:
        return 1
    if not row_blocks_pay():
        return None
    for blocks in range(2, batch // 8 + 1):
        if batch % blocks == 0 and (batch // blocks) * k * n <= _SMALL_GEMM:
            return blocks
    return None


def _row_blocks(xp, batch, k, n):
    """How a per-step GEMM ``(batch, k) @ (k, n)`` splits the batch: 1 for one GEMM,
    else a block count dividing ``batch`` (see :func:`_small_blocks`)."""
    return _small_blocks(xp, batch, k, n) or 1


def _split_rows(a, blocks, axis):
    """``a`` with its batch axis ``axis`` split into ``blocks`` row blocks (a view of
    ``a``, or of a copy where its strides do not allow one), for GEMMs that broadcast
    over the blocks (see :func:`_row_blocks`)."""
    s = a.shape
    return a.reshape(s[:axis] + (blocks, s[axis] // blocks) + s[axis + 1 :])


def _step_matmul(xp, a, w, out, blocks):
    """``out = a @ w`` (``(B, K) @ (K, N)``, ``out`` contiguous) in ``blocks`` row blocks."""
    if blocks == 1:
        xp.matmul(a, w, out=out)
    else:
        xp.matmul(_split_rows(a, blocks, 0), w, out=_split_rows(out, blocks, 0))
