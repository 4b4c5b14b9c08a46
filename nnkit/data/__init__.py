"""Data loading: datasets, samplers, the DataLoader and built-in datasets.

Example:
    >>> from nnkit.data import DataLoader, TensorDataset
    >>> from nnkit.data.datasets import make_moons
    >>> x, y = make_moons(256, noise=0.1, seed=0)
    >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, seed=0)
    >>> xb, yb = next(iter(loader)); xb.shape
    (32, 2)
"""

from nnkit.data import datasets, transforms
from nnkit.data.collate import default_collate
from nnkit.data.dataloader import DataLoader
from nnkit.data.dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    SampleBatch,
    Subset,
    TensorDataset,
    random_split,
)
from nnkit.data.datasets import (
    Split,
    from_csv,
    from_npz,
    load_digits,
    load_idx,
    make_moons,
    make_spirals,
    save_idx,
)
from nnkit.data.sampler import (
    BatchSampler,
    DistributedBatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    epoch_rng,
)
from nnkit.data.transforms import Compose, minmax_scale, one_hot, standardize
from nnkit.data.worker import WorkerError, WorkerInfo, get_worker_info, sample_rng

__all__ = [
    "BatchSampler",
    "DistributedBatchSampler",
    "Compose",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "SampleBatch",
    "Sampler",
    "SequentialSampler",
    "Split",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WorkerError",
    "WorkerInfo",
    "datasets",
    "default_collate",
    "epoch_rng",
    "from_csv",
    "from_npz",
    "get_worker_info",
    "load_digits",
    "load_idx",
    "make_moons",
    "make_spirals",
    "minmax_scale",
    "one_hot",
    "random_split",
    "sample_rng",
    "save_idx",
    "standardize",
    "transforms",
]
