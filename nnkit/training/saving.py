"""``Saving``: the Keras-style file methods of a model (``save``, ``save_weights``,
``load_weights``), over :mod:`nnkit.io`'s HDF5 checkpoints (no pickle)."""

from __future__ import annotations

from typing import Any

__all__ = ["Saving"]


class Saving:
    """Mixin of :class:`~nnkit.training.Trainer`: writes and reads a model's files."""

    def save(self, path: str) -> None:
        """Save the whole model to one file: architecture (each layer's ``get_config``),
        weights, optimizer state and compile settings; :func:`nnkit.load_model` rebuilds it.

        Args:
            path: the HDF5 file to write (atomically).

        Raises:
            NotBuiltError: if a lazily built layer has not been built yet.
            SerializationError: if a layer (or a loss or metric object) cannot describe
                itself; the message names it (see
                :func:`nnkit.saving.register_serializable`).

        Example:
            >>> model.save("model.h5")
            >>> model = nnkit.load_model("model.h5")
        """
        from nnkit import io
        from nnkit.saving.model_file import model_config

        self.check_built()
        config = model_config(self, self._compiled)
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
