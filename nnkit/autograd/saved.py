"""Saved tensors: what an op keeps for its backward, and the check that it is unchanged.

:class:`SavedTensor` holds one Mat saved by ``save_for_backward`` with the Storage
version it had then; ``unpack`` gives it back as a Tensor connected to the graph (what
``ctx.saved_tensors`` returns, for a backward written in Tensor ops) and ``unpack_mat``
as the bare Mat (what ``ctx.saved_mats`` returns, for a Mat-level backward). Both raise
when the tensor was modified in place since, and both go through the saved-tensor hooks'
``unpack`` when the tensor was packed by one.
"""

from __future__ import annotations

from nnkit.autograd.grad_mode import state
from nnkit.autograd.tensor import Tensor, TensorImpl, leaf_alias
from nnkit.backends.mat import ArrayMat

__all__ = ["SavedTensor", "resolve_saved"]

_alloc = object.__new__

_RELEASED_MSG = (
    "Trying to backward through the graph a second time (or to access saved tensors "
    "after they have been freed) at {name}. Saved tensors are freed after backward; "
    "call backward(retain_graph=True) the first time if you need to backward twice."
)


class SavedTensor:
    """One tensor saved for backward, with the Storage version it had when saved.

    ``kind`` is ``'leaf'`` (a leaf requiring grad: kept by identity so gradients reach
    it), ``'input'``/``'output'`` (reconnected to ``grad_fn`` on unpack, for double
    backward) or ``'const'`` (no graph).
    """

    __slots__ = ("mat", "impl", "grad_fn", "output_nr", "version", "kind", "packed")

    def __init__(self, mat, impl, grad_fn, output_nr, kind) -> None:
        self.mat = mat
        self.impl = impl
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        self.kind = kind
        self.version = mat.version
        self.packed = None

    def unpack(self, node):
        if self.packed is not None:
            mat = self.packed[1](self.packed[0])._impl.data
            # made by user code (which may keep it) while a backward runs: not new
            mat.serial = 0
        else:
            mat = self.mat
            if mat.version != self.version:
                raise _modified(node, mat, self.version)
        kind = self.kind
        t = Tensor.__new__(Tensor)
        if kind == "input":  # the common case first
            fn = self.grad_fn
            if fn is None:
                impl = TensorImpl(mat, False)
            else:
                impl = TensorImpl(mat, True)
                impl.grad_fn = fn
                impl.output_nr = self.output_nr
        elif kind == "leaf":
            if self.packed is None:
                t._impl = self.impl
                return t
            impl = leaf_alias(mat, self.impl)
        elif kind == "output":
            # An output's grad_fn is the saving node itself, passed in rather than
            # stored: storing it would make a node -> saved -> node reference cycle.
            impl = TensorImpl(mat, self.output_nr >= 0)
            if self.output_nr >= 0:
                impl.grad_fn = node
                impl.output_nr = self.output_nr
        else:  # const
            impl = TensorImpl(mat, False)
        t._impl = impl
        return t

    def unpack_mat(self, node):
        """The saved Mat itself, for a Mat-level backward (``Op.backward_mat``): checked
        and hooked as :meth:`unpack`, without the Tensor (nothing is recorded there)."""
        if self.packed is not None:
            mat = self.packed[1](self.packed[0])._impl.data
            mat.serial = 0  # as in unpack
            return mat
        mat = self.mat
        if mat.version != self.version:
            raise _modified(node, mat, self.version)
        return mat


def _modified(node, mat, version) -> RuntimeError:
    """The error for a saved tensor written in place since it was saved."""
    return RuntimeError(
        f"one of the tensors needed for gradient computation has been modified "
        f"by an in-place operation: {node.name()} saved a tensor of shape "
        f"{list(mat.shape)} at version {version}; it is now at version "
        f"{mat.version}. Use an out-of-place op, or clone() before modifying."
    )


def resolve_saved(cls, node, args, impls, outs, mats) -> None:
    """Turn what forward passed to save_for_backward into SavedTensors."""
    saved = []
    for obj in node._to_save:
        if obj is None:
            saved.append(None)
            continue
        for a, i in zip(args, impls):  # an input (the common case), inline: this is hot
            if i is not None and (a is obj or i.data is obj):
                # SavedTensor(...) without the __init__ call (from C: slow)
                s = _alloc(SavedTensor)
                s.mat = m = i.data
                s.version = m.version
                s.packed = None
                fn = i.grad_fn
                if fn is None and i.requires_grad:
                    s.impl, s.grad_fn, s.output_nr, s.kind = i, None, 0, "leaf"
                else:
                    s.impl, s.grad_fn, s.output_nr, s.kind = None, fn, i.output_nr, "input"
                saved.append(s)
                break
        else:
            if obj is mats[0] and len(mats) == 1:  # the one output (tanh's, exp's, ...)
                s = _alloc(SavedTensor)
                s.mat = obj
                s.version = obj.version
                s.packed = s.impl = s.grad_fn = None
                s.output_nr = 0 if obj.dtype.kind == "f" else -1
                s.kind = "output"
                saved.append(s)
            else:
                saved.append(_saved_other(cls, obj, outs, mats))
    node._saved = saved
    node._to_save = ()
    hooks = state.saved_hooks
    if hooks:
        pack, unpack = hooks[-1]
        for s in saved:
            if s is not None:
                t = Tensor.__new__(Tensor)
                t._impl = TensorImpl(s.mat, False)
                s.packed = (pack(t), unpack)
                s.mat = None


def _saved_other(cls, obj, outs, mats) -> SavedTensor:
    """The SavedTensor of a saved object that is none of the inputs."""
    mat = obj._impl.data if isinstance(obj, Tensor) else obj
    if not isinstance(mat, ArrayMat):
        raise TypeError(
            f"{cls.__name__}: save_for_backward takes tensors, got {type(obj).__name__}"
        )
    for k, (o, m) in enumerate(zip(outs, mats)):
        if o is obj or m is obj:  # output_nr -1: a non-differentiable output
            return SavedTensor(mat, None, None, k if m.kind == "f" else -1, "output")
    return SavedTensor(mat, None, None, 0, "const")
