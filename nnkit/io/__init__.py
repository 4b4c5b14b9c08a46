"""HDF5 checkpoints, safe by construction: nothing is pickled, every write is atomic.

A checkpoint holds a model's weights (datasets named by dotted parameter path under
``model/``), the optimizer, scheduler, DataLoader and callback states, nnkit's global
random state, the epoch, step, extra values and the run's YAML config, so that training
resumed from it continues bit-for-bit.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.h5")
    >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> opt = nnkit.optim.SGD(model.parameters(), lr=0.1)
    >>> nnkit.io.save_checkpoint(path, model=model, optimizer=opt, epoch=2)
    >>> info = nnkit.io.load_checkpoint(path, model=model, optimizer=opt)
    >>> info["epoch"]
    2
"""

from nnkit.io.checkpoint import (
    load_checkpoint,
    load_weights,
    read_checkpoint,
    save_checkpoint,
    save_weights,
    verify_checkpoint,
)
from nnkit.io.errors import CheckpointError
from nnkit.io.format import FORMAT_NAME, FORMAT_VERSION

__all__ = [
    "save_checkpoint",
    "load_checkpoint",
    "save_weights",
    "load_weights",
    "read_checkpoint",
    "verify_checkpoint",
    "CheckpointError",
    "FORMAT_NAME",
    "FORMAT_VERSION",
]
