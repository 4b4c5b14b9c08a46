"""Built-in datasets: bundled, synthetic and read from local files.

Every loader returns plain NumPy arrays (wrap them in :class:`~nnkit.data.TensorDataset`)
and owns its random generator; none touches NumPy's global random state, and
scikit-learn is imported only by :func:`load_digits`, when it is called.

* :func:`load_digits` -- scikit-learn's 8x8 digits, as a :class:`Split`;
* :func:`make_moons`, :func:`make_spirals` -- 2-d toy classification problems;
* :func:`from_csv`, :func:`from_npz` -- numeric tables from local files;
* :func:`load_idx`, :func:`save_idx` -- MNIST's IDX format (plain or gzip).
"""

from nnkit.data.datasets.digits import Split, load_digits
from nnkit.data.datasets.idx import load_idx, save_idx
from nnkit.data.datasets.synthetic import make_moons, make_spirals
from nnkit.data.datasets.tabular import from_csv, from_npz

__all__ = [
    "Split",
    "from_csv",
    "from_npz",
    "load_digits",
    "load_idx",
    "make_moons",
    "make_spirals",
    "save_idx",
]
