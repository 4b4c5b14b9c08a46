"""Callbacks of ``Model.fit``/``evaluate``/``predict`` (Keras names and hooks).

Example:
    >>> import os, tempfile
    >>> from nnkit.callbacks import EarlyStopping, ModelCheckpoint
    >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
    >>> model = nnkit.Sequential(nn.Linear(4, 2))
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> tmp = tempfile.mkdtemp()
    >>> callbacks = [EarlyStopping(patience=1, restore_best_weights=True),
    ...              ModelCheckpoint(os.path.join(tmp, "best.h5"), save_best_only=True)]
    >>> history = model.fit(x, y, epochs=3, validation_split=0.25, verbose=0,
    ...                     callbacks=callbacks)
    >>> history.epoch, os.listdir(tmp)
    ([0, 1, 2], ['best.h5'])
"""

from nnkit.callbacks.backup_and_restore import BackupAndRestore
from nnkit.callbacks.callback import Callback
from nnkit.callbacks.callback_list import CallbackList
from nnkit.callbacks.csv_logger import CSVLogger
from nnkit.callbacks.early_stopping import EarlyStopping
from nnkit.callbacks.history import History
from nnkit.callbacks.learning_rate_scheduler import LearningRateScheduler
from nnkit.callbacks.model_checkpoint import ModelCheckpoint
from nnkit.callbacks.progbar_logger import ProgbarLogger
from nnkit.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from nnkit.callbacks.terminate_on_nan import NonFiniteLossError, TerminateOnNaN

__all__ = [
    "Callback",
    "CallbackList",
    "History",
    "ProgbarLogger",
    "EarlyStopping",
    "ModelCheckpoint",
    "ReduceLROnPlateau",
    "LearningRateScheduler",
    "CSVLogger",
    "TerminateOnNaN",
    "NonFiniteLossError",
    "BackupAndRestore",
]
