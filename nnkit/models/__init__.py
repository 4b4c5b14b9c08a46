"""Whole networks: :class:`Model`, :class:`Sequential` and functional models.

``Model`` is a :class:`~nnkit.layers.Module` with the Keras training API of
:class:`~nnkit.training.Trainer`; it sits above the layers and the training loop (as
Keras keeps ``models/`` above ``layers/``). ``nnkit.Model(inputs, outputs)`` returns a
:class:`Functional`. The public names are ``nnkit.Model``, ``nnkit.Sequential`` and
``nnkit.nn.Sequential``; ``model_from_json`` is :func:`nnkit.saving.model_from_json`
(Keras's ``keras.models.model_from_json``).
"""

from nnkit.models.functional import Functional
from nnkit.models.model import Model
from nnkit.models.sequential import Sequential
from nnkit.saving.model_file import model_from_json

__all__ = ["Model", "Sequential", "Functional", "model_from_json"]
