"""Activation checkpointing: keep less for backward, recompute it when needed.

``checkpoint(fn, *args)`` runs ``fn`` without recording its graph, so none of the
intermediate activations inside ``fn`` are kept; one node stands for the whole
segment. In backward that node restores the random state ``fn`` saw, recomputes
``fn`` with grad on from (detached copies of) its saved inputs, and backpropagates
through the recomputed graph: the inputs get their gradients from it, and the
parameters used inside ``fn`` (leaves of the recomputed graph) accumulate theirs
directly. Compute goes up by about one extra forward of each segment; the memory kept
between forward and backward drops to the segments' inputs.
"""

from __future__ import annotations

from nnkit.autograd.engine import run_backward
from nnkit.autograd.factories import empty
from nnkit.autograd.function import Function
from nnkit.autograd.grad_mode import enable_grad, state
from nnkit.autograd.graph import saved_tensors_hooks
from nnkit.autograd.tensor import Tensor
from nnkit.random import get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(
    function, *args, use_reentrant: bool = False, preserve_rng_state: bool = True, **kwargs
):
    """Run ``function(*args, **kwargs)`` keeping no intermediate activations for backward.

    The result is the same as calling ``function`` directly, and so are the gradients;
    backward recomputes ``function`` once. With ``preserve_rng_state`` the recomputation
    draws the same random numbers (dropout masks, ``nnkit.rand``) as the forward did.

    Args:
        function: a callable returning a Tensor or a tuple of Tensors. It must compute
            the same thing when called again (same ops, same parameters).
        *args: its positional arguments; Tensors among them are saved (only they are).
        use_reentrant: accepted for PyTorch compatibility; both values use the same
            single-node implementation (parameters used inside ``function`` receive
            gradients even when no input requires grad).
        preserve_rng_state: save nnkit's global random state before the forward and
            restore it for the recomputation.
        **kwargs: keyword arguments for ``function`` (kept, not saved as tensors).

    Returns:
        What ``function`` returns.

    Raises:
        TypeError: if ``function`` returns something other than Tensors.
        RuntimeError: in backward, if a saved input was modified in place since.

    Note:
        The recomputed segment accumulates into its parameters' ``.grad`` even under
        :func:`nnkit.autograd.grad` or ``backward(inputs=...)``, and with
        ``create_graph=True`` the input gradients it returns do not carry a graph back to
        the inputs (no double backward through a checkpoint), as with PyTorch's
        reentrant checkpoint.

    Example:
        >>> w1 = nnkit.ones(3, 4, requires_grad=True)
        >>> w2 = nnkit.ones(4, 1, requires_grad=True)
        >>> def block(h):
        ...     return (h @ w1).relu() @ w2
        >>> x = nnkit.tensor([[1.0, 2.0, -0.5]], requires_grad=True)
        >>> y = nnkit.checkpoint(block, x)  # nothing inside block is kept
        >>> y.sum().backward()  # block runs again here
        >>> x.grad
        tensor([[4.0, 4.0, 4.0]])
    """
    del use_reentrant
    if not state.grad_enabled:
        return function(*args, **kwargs)
    rng = get_rng_state() if preserve_rng_state else None
    if any(isinstance(a, Tensor) and a._impl.requires_grad for a in args):
        return Checkpoint.apply(function, kwargs, rng, None, *args)
    # No input requires grad: only a parameter inside can make the output need one.
    # Find out with the graph on but every saved tensor dropped, then keep the result.
    with saved_tensors_hooks(_discard, _discarded):
        out = function(*args, **kwargs)
    outs = _as_outputs(out)
    if not any(o._impl.requires_grad for o in outs):
        return out
    anchor = empty(0, requires_grad=True)  # gives the segment's node an edge to hang on
    pre = tuple(o.detach() for o in outs)
    res = Checkpoint.apply(
        function, kwargs, rng, pre if isinstance(out, tuple) else pre[0], anchor, *args
    )
    return res


def checkpoint_sequential(
    functions, segments: int, input, use_reentrant: bool = False, preserve_rng_state: bool = True
):
    """Run ``functions`` (a sequence of callables, or a Sequential) one after another,
    checkpointing them in ``segments`` consecutive groups.

    Each group is one :func:`checkpoint`: only the group boundaries are kept for
    backward, and each group runs again there. The result and gradients equal those of
    running ``functions`` directly.

    Args:
        functions: callables applied in order (each takes the previous output), or a
            container whose ``children()`` are.
        segments: how many checkpointed groups to split them into (``>= 1``; groups of
            ``ceil(len(functions) / segments)``, so there may be fewer).
        input: the first function's input.
        use_reentrant: accepted for PyTorch compatibility (see :func:`checkpoint`).
        preserve_rng_state: replay the random state in each recomputation.

    Returns:
        The last function's output.

    Raises:
        ValueError: for ``segments < 1``.

    Example:
        >>> fns = [lambda h: h * 2, lambda h: h.relu(), lambda h: h + 1, lambda h: h.exp()]
        >>> x = nnkit.tensor([0.5, -1.0], requires_grad=True)
        >>> y = nnkit.autograd.checkpoint_sequential(fns, 2, x)
        >>> y.sum().backward()
        >>> x.grad
        tensor([14.7781,  0.0000])
    """
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be >= 1, got {segments}")
    size = max(1, -(-len(fns) // segments))

    def run(group):
        def segment(h):
            for f in group:
                h = f(h)
            return h

        return segment

    for start in range(0, len(fns), size):
        input = checkpoint(
            run(fns[start : start + size]),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve_rng_state,
        )
    return input


def _discard(tensor):
    return None


def _discarded(packed):
    raise RuntimeError(
        "checkpoint: a tensor saved during the probing forward was used in "
        "backward (this is a bug in nnkit)"
    )


def _as_outputs(out) -> tuple:
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(
                f"checkpoint: the checkpointed function must return a Tensor or "
                f"a tuple of Tensors, got {type(o).__name__}"
            )
    return outs


class Checkpoint(Function):
    """One node standing for a whole checkpointed segment."""

    @staticmethod
    def forward(ctx, run_fn, kwargs, rng_state, precomputed, *args):
        ctx.run_fn, ctx.kwargs, ctx.rng_state = run_fn, kwargs, rng_state
        ctx.anchored = precomputed is not None
        if ctx.anchored:  # args[0] is the anchor leaf, not an argument of run_fn
            args = args[1:]
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_idx = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(args[k] for k in ctx.tensor_idx))
        out = precomputed if ctx.anchored else run_fn(*args, **kwargs)  # grad is off here
        outs = _as_outputs(out)
        ctx.n_out = len(outs)
        # Function outputs must be new tensors; detach() is a new handle, no copy.
        res = tuple(o.detach() for o in outs)
        return res if isinstance(out, tuple) else res[0]

    @staticmethod
    def backward(ctx, *grads):
        create_graph = state.grad_enabled  # the engine turns grad on for create_graph
        args = list(ctx.args)
        inputs = []
        for k, t in zip(ctx.tensor_idx, ctx.saved_tensors):
            d = t.detach()
            if t.requires_grad:
                d.requires_grad_(True)
                inputs.append((k, d))
            args[k] = d
        outs = _recompute(ctx, args)
        roots, root_grads = [], []
        for o, g in zip(outs, grads):
            if g is not None and o._impl.requires_grad:
                roots.append(o)
                root_grads.append(g)
        if roots:
            run_backward(roots, root_grads, retain_graph=False, create_graph=create_graph)
        arg_grads = [None] * len(args)
        for k, d in inputs:
            arg_grads[k] = d.grad
        lead = (None,) * (5 if ctx.anchored else 4)
        return lead + tuple(arg_grads)


def _recompute(ctx, args) -> tuple:
    restore = None
    if ctx.rng_state is not None:
        restore = get_rng_state()
        set_rng_state(ctx.rng_state)
    try:
        with enable_grad():
            out = ctx.run_fn(*args, **ctx.kwargs)
    finally:
        if restore is not None:
            set_rng_state(restore)
    outs = _as_outputs(out)
    if len(outs) != ctx.n_out:
        raise RuntimeError(
            f"checkpoint: the recomputation returned {len(outs)} outputs, the "
            f"forward returned {ctx.n_out}"
        )
    return outs
