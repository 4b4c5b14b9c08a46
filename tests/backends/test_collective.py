"""The host-buffer helpers communicators use, and the guarded NCCL module."""

from __future__ import annotations

import numpy as np
import pytest

from nnkit.backends import NumpyMat, collective, nccl


def test_a_contiguous_cpu_mat_is_shared_and_commit_bumps_its_version():
    mat = NumpyMat(np.arange(4.0))
    buffer = collective.host_buffer(mat)
    assert buffer is mat.to_numpy()
    version = mat.storage.version
    buffer *= 2
    collective.commit_host_buffer(mat, buffer)
    assert mat.tolist() == [0.0, 2.0, 4.0, 6.0] and mat.storage.version == version + 1


def test_a_non_contiguous_view_gets_a_copy_and_commit_writes_through():
    base = NumpyMat(np.arange(4.0).reshape(2, 2))
    view = base.transpose()
    buffer = collective.host_buffer(view)
    assert buffer.flags.c_contiguous and not np.shares_memory(buffer, base.to_numpy())
    collective.commit_host_buffer(view, buffer + 1)
    assert base.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_read_only_view_gets_a_copy():
    mat = NumpyMat(np.arange(2.0)).expand((3, 2))
    buffer = collective.host_buffer(mat)
    assert buffer is not mat.to_numpy() and buffer.flags.writeable


def test_reduce_host_buffers():
    a, b = np.array([1.0, 5.0]), np.array([3.0, 2.0])
    assert collective.reduce_host_buffers([a, b]).tolist() == [4.0, 7.0]
    assert collective.reduce_host_buffers([a, b], "max").tolist() == [3.0, 5.0]
    assert collective.reduce_host_buffers([a, b], "min").tolist() == [1.0, 2.0]
    assert a.tolist() == [1.0, 5.0]  # inputs untouched
    with pytest.raises(ValueError, match="unknown reduce op 'mean'"):
        collective.reduce_host_buffers([a, b], "mean")
    with pytest.raises(ValueError, match="different shapes"):
        collective.reduce_host_buffers([a, np.ones(3)])


def test_nccl_never_claims_a_cpu_mat():
    assert not nccl.supports(NumpyMat(np.ones(2)))
    if not nccl.available():
        with pytest.raises(RuntimeError, match=r"pip install 'nnkit\[cuda\]'"):
            nccl.unique_id()
