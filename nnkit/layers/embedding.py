"""``Embedding``: a lookup table from integer indices to learned vectors."""

from __future__ import annotations

from nnkit.autograd.factories import empty
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers import initializers as init
from nnkit.layers.module import Module, Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Row ``i`` of ``weight`` for each index ``i`` of the input.

    Args:
        num_embeddings: the size of the table.
        embedding_dim: the size of each vector.
        padding_idx: an index whose row is zero at initialisation and gets no gradient.

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
        *,
        device=None,
        dtype=None,
        _weight: Tensor | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"Embedding: {name} must be a positive integer. Received: {name}={value!r}"
                )
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"Embedding: padding_idx must be within num_embeddings. "
                    f"Received: padding_idx={padding_idx}, "
                    f"num_embeddings={num_embeddings}"
                )
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(
                empty(num_embeddings, embedding_dim, device=device, dtype=dtype)
            )
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"Embedding: _weight must have shape ({num_embeddings}, "
                    f"{embedding_dim}), got {tuple(_weight.shape)}"
                )
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """Draw the table from N(0, 1); zero the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    @classmethod
    def from_pretrained(
        cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None
    ) -> "Embedding":
        """An Embedding whose table is (a copy of) ``embeddings``; frozen by default.

        Args:
            embeddings: the table, of shape ``(num_embeddings, embedding_dim)``.
            freeze: keep the table fixed (``weight.requires_grad`` False).
            padding_idx: as for the constructor.

        Returns:
            The new Embedding.
        """
        if embeddings.ndim != 2:
            raise ValueError(
                f"Embeddings parameter is expected to be 2-dimensional, got shape "
                f"{tuple(embeddings.shape)}"
            )
        rows, cols = embeddings.shape
        layer = cls(rows, cols, padding_idx, _weight=embeddings.detach().clone())
        layer.weight.requires_grad_(not freeze)
        return layer

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"
