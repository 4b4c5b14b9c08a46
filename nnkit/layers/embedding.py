"""``Embedding``: a lookup table from integer indices to learned vectors; ``EmbeddingBag``:
the sums, means or maxima of bags of its rows."""

from __future__ import annotations

from nnkit.autograd.factories import empty
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops.embedding_bag import embedding_bag
from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers import initializers as init
from nnkit.layers.module import Module, Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _check_table(name, num_embeddings, embedding_dim, padding_idx):
    """Validate the table sizes; ``padding_idx`` made non-negative."""
    for arg, value in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name}: {arg} must be a positive integer. Received: {arg}={value!r}")
    if padding_idx is not None:
        if not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(
                f"{name}: padding_idx must be within num_embeddings. "
                f"Received: padding_idx={padding_idx}, "
                f"num_embeddings={num_embeddings}"
            )
        padding_idx %= num_embeddings
    return padding_idx


def _table(name, num_embeddings, embedding_dim, weight, device, dtype):
    """The weight Parameter: ``weight`` itself (shape checked) or an empty one."""
    if weight is None:
        return Parameter(empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
    if tuple(weight.shape) != (num_embeddings, embedding_dim):
        raise ValueError(
            f"{name}: _weight must have shape ({num_embeddings}, "
            f"{embedding_dim}), got {tuple(weight.shape)}"
        )
    return Parameter(weight)


class Embedding(Module):
    """Row ``i`` of ``weight`` for each index ``i`` of the input.

    Args:
        num_embeddings: the size of the table.
        embedding_dim: the size of each vector.
        padding_idx: an index whose row is zero at initialisation and gets no gradient.
        max_norm: renormalise, in place, looked-up rows whose norm exceeds it (see
            :func:`nnkit.nn.functional.embedding`).
        norm_type: the p of that norm (default 2).
        scale_grad_by_freq: divide each row's gradient by its index's count in the input.
        sparse: sparse gradients; nnkit has none, so True raises NotImplementedError.
        _weight: an initial table of shape ``(num_embeddings, embedding_dim)``.
        _freeze: keep that table fixed (``weight.requires_grad`` False).

    Attributes:
        weight: shape ``(num_embeddings, embedding_dim)``, from N(0, 1).

    Raises:
        ValueError: for a non-positive size or an out-of-range ``padding_idx``.

    Example:
        >>> emb = Embedding(10, 3)
        >>> emb(nnkit.tensor([[1, 2, 4, 5], [4, 3, 2, 9]])).shape
        (2, 4, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        padding_idx = _check_table("Embedding", num_embeddings, embedding_dim, padding_idx)
        if sparse:
            raise NotImplementedError(
                "Embedding: sparse=True is not supported (nnkit has no sparse "
                "gradients); use sparse=False"
            )
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.weight = _table("Embedding", num_embeddings, embedding_dim, _weight, device, dtype)
        if _weight is None:
            self.reset_parameters()
        self.weight.requires_grad_(not _freeze)

    def reset_parameters(self) -> None:
        """Draw the table from N(0, 1); zero the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> "Embedding":
        """An Embedding whose table is (a copy of) ``embeddings``; frozen by default.

        Args:
            embeddings: the table, of shape ``(num_embeddings, embedding_dim)``.
            freeze: keep the table fixed (``weight.requires_grad`` False).
            padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse: as for the
                constructor (the ``padding_idx`` row is kept as given).

        Returns:
            The new Embedding.
        """
        if embeddings.ndim != 2:
            raise ValueError(
                f"Embeddings parameter is expected to be 2-dimensional, got shape "
                f"{tuple(embeddings.shape)}"
            )
        rows, cols = embeddings.shape
        return cls(
            rows,
            cols,
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
            embeddings.detach().clone(),
            freeze,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of rows of a learned table, one output row per bag
    (see :func:`nnkit.nn.functional.embedding_bag`), without building the lookup.

    Args:
        num_embeddings: the size of the table.
        embedding_dim: the size of each vector.
        max_norm: renormalise, in place, looked-up rows whose norm exceeds it.
        norm_type: the p of that norm (default 2).
        scale_grad_by_freq: divide each row's gradient by its index's count in the
            input (not with ``'max'``).
        mode: ``'sum'``, ``'mean'`` (default) or ``'max'``.
        sparse: sparse gradients; nnkit has none, so True raises NotImplementedError.
        _weight: an initial table of shape ``(num_embeddings, embedding_dim)``.
        include_last_offset: ``offsets`` carry the end of the last bag (CSR style).
        padding_idx: an index left out of its bags; its row starts at zero.

    Attributes:
        weight: shape ``(num_embeddings, embedding_dim)``, from N(0, 1).

    Call it as ``bag(input, offsets=None, per_sample_weights=None)``.

    Example:
        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(nnkit.tensor([1, 2, 4, 5, 4, 3]), nnkit.tensor([0, 4])).shape
        (2, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        padding_idx = _check_table("EmbeddingBag", num_embeddings, embedding_dim, padding_idx)
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if sparse:
            raise NotImplementedError(
                "EmbeddingBag: sparse=True is not supported (nnkit has no sparse "
                "gradients); use sparse=False"
            )
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        self.weight = _table("EmbeddingBag", num_embeddings, embedding_dim, _weight, device, dtype)
        if _weight is None:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the table from N(0, 1); zero the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor, offsets=None, per_sample_weights=None) -> Tensor:
        return embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> "EmbeddingBag":
        """An EmbeddingBag whose table is (a copy of) ``embeddings``; frozen by default.

        Args:
            embeddings: the table, of shape ``(num_embeddings, embedding_dim)``.
            freeze: keep the table fixed (``weight.requires_grad`` False).
            max_norm, norm_type, scale_grad_by_freq, mode: as for the constructor.
            sparse, include_last_offset, padding_idx: as for the constructor.

        Returns:
            The new EmbeddingBag (its ``padding_idx`` row is kept as given).
        """
        if embeddings.ndim != 2:
            raise ValueError(
                f"Embeddings parameter is expected to be 2-dimensional, got shape "
                f"{tuple(embeddings.shape)}"
            )
        rows, cols = embeddings.shape
        layer = cls(
            rows,
            cols,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            mode,
            sparse,
            embeddings.detach().clone(),
            include_last_offset,
            padding_idx,
        )
        layer.weight.requires_grad_(not freeze)
        return layer

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
