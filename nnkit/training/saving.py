"""``Saving``: the Keras-style file methods of a model (``save``, ``save_weights``,
``load_weights``), over :mod:`nnkit.io`'s HDF5 checkpoints (no pickle)."""

from __future__ import annotations

import errno
import os
from typing import Any

from nnkit.io import checkpoint as checkpoints
from nnkit.saving.model_file import model_config

__all__ = ["Saving"]


class Saving:
    """Mixin of :class:`~nnkit.training.Trainer`: writes and reads a model's files."""

    def save(self, path: str, overwrite: bool = True) -> None:
        """Save the whole model to one file: architecture (each layer's ``get_config``),
        weights, optimizer state and compile settings; :func:`nnkit.load_model` rebuilds it.

        Args:
            path: the HDF5 file to write (atomically).
            overwrite: False refuses to replace an existing file (Keras asks on the
                terminal instead; nnkit raises, so a batch job neither hangs nor loses it).

        Raises:
            FileExistsError: with ``overwrite=False``, if ``path`` exists.
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
        _refuse_overwrite(path, overwrite)
        self.check_built()
        config = model_config(self, self._compiled)
        checkpoints.save_checkpoint(path, model=self, optimizer=self.optimizer, config=config)

    def save_weights(self, path: str, overwrite: bool = True) -> None:
        """Save the weights (the ``state_dict``) to an HDF5 file.

        Args:
            path: the file to write (atomically; ``.weights.h5`` is Keras's suffix).
            overwrite: False refuses to replace an existing file (see :meth:`save`).

        Raises:
            NotBuiltError: if a lazily built layer has not been built yet.
            FileExistsError: with ``overwrite=False``, if ``path`` exists.
        """
        _refuse_overwrite(path, overwrite)
        checkpoints.save_weights(path, self)

    def load_weights(self, path: str, skip_mismatch: bool = False, strict: bool = True) -> Any:
        """Load weights saved by :meth:`save_weights` (or :meth:`save`).

        Args:
            path: the HDF5 file.
            skip_mismatch: Keras's flag: leave the weights whose saved shape differs
                from the model's as they are (a warning names them) instead of raising.
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
        return checkpoints.load_weights(path, self, strict=strict, skip_mismatch=skip_mismatch)


def _refuse_overwrite(path: Any, overwrite: bool) -> None:
    if not overwrite and os.path.exists(path):
        raise FileExistsError(
            errno.EEXIST, "the file exists and overwrite=False was given", os.fspath(path)
        )
