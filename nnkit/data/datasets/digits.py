"""The 8x8 handwritten digits that scikit-learn ships, split into train and test."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nnkit.data.datasets.tabular import split_count

__all__ = ["Split", "load_digits"]


class Split(NamedTuple):
    """A train/test split of a dataset, as four NumPy arrays.

    Unpacks like scikit-learn's ``train_test_split`` result reordered by role:
    ``x_train, y_train, x_test, y_test = split``.

    Attributes:
        x_train: training inputs.
        y_train: training targets.
        x_test: test inputs.
        y_test: test targets.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def load_digits(
    test_size: float = 0.2, seed: int = 0, *, scale: bool = True, flatten: bool = True
) -> Split:
    """The 1 797 8x8 grey-scale digit images bundled with scikit-learn.

    The samples are shuffled by this call's own generator (seeded with ``seed``)
    and split into train and test parts.

    Args:
        test_size: the test part, as a fraction in (0, 1) (rounded up) or a count.
        seed: seeds the shuffle.
        scale: divide the pixel values (0..16) by 16, giving values in [0, 1].
        flatten: images as 64 features ``(N, 64)``; ``False`` gives ``(N, 1, 8, 8)``
            (channels first, for ``Conv2d``).

    Returns:
        A :class:`Split` of ``float32`` images and ``int64`` labels 0..9.

    Raises:
        ImportError: if scikit-learn is not installed.
        ValueError: if ``test_size`` leaves an empty part.

    Example:
        >>> x_train, y_train, x_test, y_test = load_digits(test_size=0.2, seed=0)
        >>> x_train.shape, x_test.shape
        ((1437, 64), (360, 64))
    """
    try:
        from sklearn.datasets import load_digits as sklearn_digits  # optional: scikit-learn
    except ImportError as exc:
        raise ImportError("load_digits needs scikit-learn: pip install scikit-learn") from exc
    bunch = sklearn_digits()
    x = bunch.data.astype(np.float32) / (16.0 if scale else 1.0)
    x = x if flatten else x.reshape(-1, 1, 8, 8)
    y = bunch.target.astype(np.int64)
    n_test = split_count("load_digits", test_size, len(x))
    perm = np.random.default_rng(seed).permutation(len(x))
    test, train = perm[:n_test], perm[n_test:]
    return Split(x[train], y[train], x[test], y[test])
