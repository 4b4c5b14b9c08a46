"""``Saving``: the Keras-style file methods of a model (``save``, ``save_weights``,
``load_weights``), over :mod:`nnkit.io`'s HDF5 checkpoints (no pickle)."""

from __future__ import annotations

from typing import Any

__all__ = ["Saving"]


class Saving:
    """Mixin of :class:`~nnkit.training.Trainer`: writes and reads a model's files."""

    def save(self, path: str) -> None:
        """Save a full checkpoint: weights, optimizer state and the compile config (JSON).

        Args:
            path: the HDF5 file to write (atomically).

        Raises:
            NotBuiltError: if a lazily built layer has not been built yet.

        Example:
            >>> model.save("model.h5")
            >>> nnkit.io.load_checkpoint("model.h5", model=model, optimizer=model.optimizer)
        """
        from nnkit import io

        config = None if self._compiled is None else self._compiled.to_json()
        io.save_checkpoint(path, model=self, optimizer=self.optimizer, config=config)

    def save_weights(self, path: str) -> None:
        """Save the weights (the ``state_dict``) to an HDF5 file.

        Raises:
            NotBuiltError: if a lazily built layer has not been built yet.
        """
        from nnkit import io

        io.save_weights(path, self)

    def load_weights(self, path: str, strict: bool = True) -> Any:
        """Load weights saved by :meth:`save_weights` (or :meth:`save`).

        Args:
            path: the HDF5 file.
            strict: require the file's keys to match the model's exactly.

        Returns:
            What :func:`nnkit.io.load_weights` returns (the missing/unexpected keys).
        """
        from nnkit import io

        return io.load_weights(path, self, strict=strict)
