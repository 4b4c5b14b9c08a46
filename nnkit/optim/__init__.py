"""Optimizers and learning-rate schedules (``nnkit.optim``), with PyTorch's API.

Example:
    >>> model = nn.Linear(4, 2)
    >>> opt = nnkit.optim.Adam(model.parameters(), lr=1e-3)
    >>> sched = nnkit.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    >>> for epoch in range(50):
    ...     opt.step()              # after a backward, in a real loop
    ...     sched.step()
    >>> round(opt.param_groups[0]["lr"], 6)   # half way down the cosine
    0.0005
"""

from nnkit.optim import lr_scheduler
from nnkit.optim.adagrad import Adagrad
from nnkit.optim.adam import Adam
from nnkit.optim.adamw import AdamW
from nnkit.optim.optimizer import Optimizer
from nnkit.optim.rmsprop import RMSprop
from nnkit.optim.sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
