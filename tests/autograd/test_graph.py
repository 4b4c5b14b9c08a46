"""Graph inspection: grad_fn.name(), next_functions, to_dot."""

from __future__ import annotations

import re

import nnkit
from nnkit.autograd.graph import to_dot


def test_name_and_next_functions():
    x = nnkit.randn(2, 3, requires_grad=True)
    w = nnkit.randn(3, 4, requires_grad=True)
    c = nnkit.randn(2, 4)
    y = (x @ w) * c
    fn = y.grad_fn
    assert fn.name() == "MulBackward"
    (mm, nr), (none, _) = fn.next_functions
    assert mm.name() == "MatMulBackward" and nr == 0 and none is None
    leaves = [n for n, _ in mm.next_functions]
    assert [n.name() for n in leaves] == ["AccumulateGrad", "AccumulateGrad"]
    assert leaves[0].variable is not None and leaves[0].variable.shape == (2, 3)
    assert leaves[1].next_functions == ()
    assert x.grad_fn is None and x.is_leaf and not y.is_leaf


def test_to_dot_lists_ops_leaves_and_edges():
    x = nnkit.randn(2, 3, requires_grad=True)
    w = nnkit.randn(3, 4, requires_grad=True)
    y = (x @ w).relu().sum()
    dot = to_dot(y, params={"w": w})
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    for name in ("SumBackward", "ReLUBackward", "MatMulBackward"):
        assert name in dot
    assert r"w\n(3, 4)\nrequires_grad=True" in dot
    assert r"leaf\n(2, 3)\nrequires_grad=True" in dot
    assert r"ReLUBackward\n(2, 4)" in dot  # a shape known from a saved output
    ids = dict(re.findall(r'(n\d+) \[label="(\w+)', dot))
    edges = re.findall(r"(n\d+) -> (n\d+|out\d+);", dot)
    named = {(ids.get(a, a), ids.get(b, b)) for a, b in edges}
    assert ("MatMulBackward", "ReLUBackward") in named
    assert ("ReLUBackward", "SumBackward") in named
    assert ("w", "MatMulBackward") in named and ("leaf", "MatMulBackward") in named
    assert ("SumBackward", "out0") in named
    assert len(edges) == 5


def test_to_dot_shared_nodes_appear_once_and_deep_graphs_work():
    x = nnkit.randn(3, requires_grad=True)
    h = x.exp()
    y = h * h + h
    dot = to_dot(y)
    assert dot.count("ExpBackward") == 1
    z = x
    for _ in range(5000):
        z = z * 1.0
    dot = to_dot(z)  # iterative traversal: no RecursionError
    assert dot.count("MulBackward") == 5000


def test_to_dot_of_a_leaf_and_a_no_grad_tensor():
    x = nnkit.randn(2, requires_grad=True)
    assert "requires_grad=True" in to_dot(x)
    c = nnkit.randn(2)
    dot = to_dot(c)
    assert "output 0" in dot and "->" not in dot


def test_to_dot_multi_output_and_user_function_shapes():
    x = nnkit.arange(6, dtype=nnkit.float32).requires_grad_()
    a, b = x.split([2, 4])
    dot = to_dot([a * 2, b * 3])
    assert "out0" in dot and "out1" in dot and dot.count("SplitBackward") <= 1
