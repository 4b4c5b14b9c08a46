"""``Saving``: the Keras-style file methods of a model (``save``, ``save_weights``,
``load_weights``), over :mod:`nnkit.io`'s HDF5 checkpoints (no pickle)."""

from __future__ import annotations

from typing import Any

from nnkit.io import checkpoint as checkpoints
from nnkit.saving.model_file import model_config

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
            >>> import os, tempfile
            >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
            >>> model = nnkit.Sequential(nn.Linear(4, 2))
            >>> model.compile("sgd", "mse")
            >>> x = nnkit.randn(3, 4)
            >>> model.save(path)
            >>> nnkit.equal(nnkit.load_model(path)(x), model(x))
            True
        """
        self.check_built()
        config = model_config(self, self._compiled)
        checkpoints.save_checkpoint(path, model=self, optimizer=self.optimizer, config=config)

    def save_weights(self, path: str) -> None:
        """Save the weights (the ``state_dict``) to an HDF5 file.

        Args:
            path: the file to write (atomically; ``.weights.h5`` is Keras's suffix).

        Raises:
            NotBuiltError: if a lazily built layer has not been built yet.
        """
        checkpoints.save_weights(path, self)

    def load_weights(self, path: str, strict: bool = True) -> Any:
        """Load weights saved by :meth:`save_weights` (or :meth:`save`).

        Args:
            path: the HDF5 file.
            strict: require the file's keys to match the model's exactly.

        Returns:
            What :func:`nnkit.io.load_weights` returns (the missing/unexpected keys).

        Example:
            >>> import os, tempfile
            >>> path = os.path.join(tempfile.mkdtemp(), "model.weights.h5")
            >>> model = nnkit.Sequential(nn.Linear(4, 2))
            >>> model.save_weights(path)
            >>> other = nnkit.Sequential(nn.Linear(4, 2))
            >>> other.load_weights(path)
            IncompatibleKeys(missing_keys=[], unexpected_keys=[])
            >>> nnkit.equal(other[0].weight, model[0].weight)
            True
        """
        return checkpoints.load_weights(path, self, strict=strict)
