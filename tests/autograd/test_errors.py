"""Error paths of the core: every misuse raises a clear error naming what went wrong."""

from __future__ import annotations

import re

import pytest

import nnkit


# ---------------------------------------------------------------- shapes
@pytest.mark.parametrize(
    "op,name",
    [
        (lambda a, b: a + b, "add"),
        (lambda a, b: a - b, "sub"),
        (lambda a, b: a * b, "mul"),
        (lambda a, b: a / b, "div"),
        (lambda a, b: nnkit.maximum(a, b), "maximum"),
    ],
)
def test_binary_shape_mismatch_names_op_and_shapes(op, name, device):
    a, b = nnkit.ones(2, 3, device=device), nnkit.ones(4, 5, device=device)
    with pytest.raises(nnkit.ShapeError) as info:
        op(a, b)
    msg = str(info.value)
    assert name in msg and "(2, 3)" in msg and "(4, 5)" in msg
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("grad", [False, True])
def test_array_library_value_errors_name_the_op(grad):
    """A ValueError from inside an op's forward (NumPy/CuPy) names the op: a shape
    problem is a ShapeError, anything else a RuntimeError (never a ShapeError)."""
    from nnkit.autograd.function import Op

    class Picky(Op):
        message = ""

        @classmethod
        def forward(cls, ctx, x):
            raise ValueError(cls.message)

        @staticmethod
        def backward(ctx, g):
            return g

    x = nnkit.ones(2, 3, requires_grad=grad)
    Picky.message = "operands could not be broadcast together with shapes (2,3) (4,5)"
    with pytest.raises(nnkit.ShapeError, match=r"^picky: the shapes \(2, 3\) do not") as info:
        Picky.apply(x)
    assert "operands" not in str(info.value)
    Picky.message = "cannot reshape array of size 6 into shape (4,)"
    with pytest.raises(nnkit.ShapeError, match=r"^picky: invalid input shapes \(2, 3\)"):
        Picky.apply(x)
    Picky.message = "Integers to negative integer powers are not allowed."
    with pytest.raises(RuntimeError, match="^picky: Integers to negative") as info:
        Picky.apply(x)
    assert not isinstance(info.value, ValueError)


@pytest.mark.parametrize("grad", [False, True])
def test_integer_power_error_is_not_a_shape_error_and_shape_errors_stay(grad):
    """An integer to a negative integer power names pow and says what is wrong (torch's
    RuntimeError, never a ShapeError); a real shape mismatch stays a ShapeError."""
    x = nnkit.tensor([2, 3])
    for call in (lambda: x**-1, lambda: nnkit.pow(x, -2)):
        with pytest.raises(RuntimeError, match="^pow: integers to negative integer powers") as info:
            call()
        assert not isinstance(info.value, (nnkit.ShapeError, ValueError))
    assert (x ** nnkit.tensor([-1, 2])).tolist() == [0, 9]  # a tensor exponent: as torch
    a = nnkit.tensor([1.0, 2.0], requires_grad=grad)
    with pytest.raises(nnkit.ShapeError, match=r"^pow: the shapes \(2,\) and \(3,\)"):
        a ** nnkit.tensor([1.0, 2.0, 3.0])


def test_shape_error_is_value_and_runtime_error():
    assert issubclass(nnkit.ShapeError, ValueError)
    assert issubclass(nnkit.ShapeError, RuntimeError)


def test_shape_error_while_recording_graph(device):
    a = nnkit.ones(2, 3, device=device, requires_grad=True)
    with pytest.raises(nnkit.ShapeError, match=r"add.*\(2, 3\).*\(3, 2\)"):
        a + nnkit.ones(3, 2, device=device)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 2, 3), (2, 2))])
def test_matmul_shape_mismatch(sa, sb, device):
    with pytest.raises(nnkit.ShapeError, match="matmul") as info:
        nnkit.ones(*sa, device=device) @ nnkit.ones(*sb, device=device)
    assert str(sa) in str(info.value) and str(sb) in str(info.value)


def test_matmul_0d_operand(device):
    with pytest.raises(nnkit.ShapeError, match="at least 1 dimension"):
        nnkit.matmul(nnkit.tensor(2.0, device=device), nnkit.ones(3, device=device))


def test_matmul_dtype_mismatch(device):
    with pytest.raises(RuntimeError, match="matmul.*float32.*float64") as info:
        nnkit.ones(2, 3, device=device) @ nnkit.ones(3, 2, dtype=nnkit.float64, device=device)
    assert not isinstance(info.value, TypeError)


@pytest.mark.parametrize("fn,name", [(nnkit.mm, "mm"), (nnkit.bmm, "bmm"), (nnkit.dot, "dot")])
def test_mm_bmm_dot_rank_errors(fn, name, device):
    with pytest.raises(nnkit.ShapeError, match=name):
        fn(nnkit.ones(2, 3, 4, 5, device=device), nnkit.ones(5, device=device))


def test_reshape_view_expand_cat_stack_errors(device):
    a = nnkit.ones(2, 3, device=device)
    with pytest.raises(nnkit.ShapeError, match=r"reshape.*\(4,\).*6"):
        a.reshape(4)
    with pytest.raises(nnkit.ShapeError, match="only one dimension can be inferred"):
        a.reshape(-1, -1)
    with pytest.raises(RuntimeError, match="view.*reshape"):
        a.T.view(6)
    with pytest.raises(nnkit.ShapeError, match="expand"):
        a.expand(3, 3)
    with pytest.raises(nnkit.ShapeError, match=r"cat.*\(2, 3\).*\(4, 5\)"):
        nnkit.cat([a, nnkit.ones(4, 5, device=device)])
    with pytest.raises(nnkit.ShapeError, match="stack"):
        nnkit.stack([a, nnkit.ones(3, 2, device=device)])
    with pytest.raises(ValueError, match="cat"):
        nnkit.cat([])
    with pytest.raises(nnkit.ShapeError, match="split"):
        a.split([1, 1], dim=1)
    with pytest.raises(ValueError, match="permutation"):
        nnkit.ones(2, 3, 4, device=device).permute(0, 0, 1)


def test_dim_out_of_range(device):
    a = nnkit.ones(2, 3, device=device)
    with pytest.raises(IndexError, match=r"sum: dimension 5 out of range.*\[-2, 1\]"):
        a.sum(5)
    with pytest.raises(IndexError, match="dimension"):
        a.size(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        a.sum((0, 0))


# ---------------------------------------------------------------- dtypes
def test_inplace_int_plus_float_raises(device):
    i = nnkit.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="add_.*float.*int64"):
        i += nnkit.tensor([0.5, 0.5], device=device)
    with pytest.raises(RuntimeError, match="add_"):
        i.add_(1.5)
    with pytest.raises(RuntimeError, match="div_"):
        i.div_(2)
    assert i.tolist() == [1, 2]  # nothing written


def test_requires_grad_on_int_tensor(device):
    with pytest.raises(RuntimeError, match="floating point"):
        nnkit.tensor([1, 2], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        nnkit.arange(3, device=device).requires_grad_()


def test_unsupported_dtype_and_data():
    with pytest.raises(TypeError, match="unsupported dtype"):
        nnkit.tensor([1.0], dtype="complex64")
    with pytest.raises(TypeError, match="can't convert"):
        nnkit.tensor(["a", "b"])
    with pytest.raises(ValueError, match="ragged"):
        nnkit.tensor([[1.0, 2.0], [3.0]])


def test_bitwise_not_on_float(device):
    with pytest.raises(TypeError, match="floating point"):
        ~nnkit.ones(2, device=device)


# ---------------------------------------------------------------- devices
def test_cuda_without_cupy_or_gpu_is_a_clear_runtime_error():
    if nnkit.cuda.is_available():
        pytest.skip("a GPU is present")
    for call in (
        lambda: nnkit.tensor([1.0], device="cuda"),
        lambda: nnkit.device("cuda:0"),
        lambda: nnkit.ones(2).to("cuda"),
        lambda: nnkit.zeros(2, device="cuda"),
    ):
        with pytest.raises(RuntimeError) as info:
            call()
        msg = str(info.value)
        assert "pip install 'nnkit[cuda]'" in msg or "no GPU" in msg.lower() or "GPU" in msg


def test_unknown_device_string():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        nnkit.tensor([1.0], device="tpu")
    with pytest.raises(ValueError, match="unknown device"):
        nnkit.device("cpu:1")


def test_device_mismatch_names_both_devices():
    """Two tensors on different devices: simulated by re-labelling one Mat's device."""
    a = nnkit.ones(2)
    b = nnkit.ones(2)
    fake = nnkit.Device("cuda", 0)
    mat_cls = type(b._impl.data)
    fake_cls = type("FakeCudaMat", (mat_cls,), {"__slots__": (), "device": fake})
    b._impl.data = fake_cls(b._impl.data.array)
    with pytest.raises(RuntimeError, match=r"same device.*cpu.*cuda:0"):
        a + b


# ---------------------------------------------------------------- autograd
def test_inplace_on_saved_tensor_names_op_and_versions(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    y = x * 2
    z = y * y  # Mul saves y (version 0)
    y.add_(1)  # version 1
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    msg = str(info.value)
    assert "MulBackward" in msg and "version 0" in msg and "version 1" in msg
    assert "in-place" in msg


def test_inplace_via_view_on_saved_tensor(device):
    x = nnkit.randn(2, 3, device=device, requires_grad=True)
    y = x.exp()  # Exp saves its output
    with nnkit.no_grad():
        y[0, 0] = 5.0  # bumps the shared storage version
    with pytest.raises(RuntimeError, match=r"ExpBackward.*version 0.*version 1"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad(device):
    x = nnkit.ones(3, device=device, requires_grad=True)
    for op in (
        lambda: x.add_(1),
        lambda: x.mul_(2),
        lambda: x.zero_(),
        lambda: x.__setitem__(0, 2.0),
    ):
        with pytest.raises(RuntimeError, match="leaf"):
            op()
    with nnkit.no_grad():
        x.add_(1)  # allowed outside the graph
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_inplace_on_view_of_leaf_requiring_grad(device):
    x = nnkit.ones(2, 3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf"):
        x[0].mul_(2)


def test_backward_twice_is_a_clear_error(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        nnkit.autograd.grad(y, x)


def test_backward_non_scalar_without_gradient(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("scalar outputs; got a tensor of shape [3]")):
        (x * 2).backward()


def test_backward_gradient_shape_mismatch(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"gradient of shape \[2\].*\[3\]"):
        (x * 2).backward(nnkit.ones(2, device=device))


def test_backward_on_tensor_without_grad(device):
    with pytest.raises(RuntimeError, match="does not require grad"):
        nnkit.ones(2, device=device).sum().backward()


def test_grad_unused_input(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    u = nnkit.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused"):
        nnkit.autograd.grad((x * 2).sum(), [x, u])
    gx, gu = nnkit.autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
    assert gu is None and gx.tolist() == [2.0, 2.0, 2.0]


def test_requires_grad_false_on_non_leaf(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2).requires_grad_(False)


def test_numpy_on_tensor_requiring_grad(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        x.numpy()


def test_item_and_bool_of_many_elements(device):
    t = nnkit.ones(3, device=device)
    with pytest.raises(RuntimeError, match="3 elements"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)


def test_assigning_bad_grad(device):
    x = nnkit.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"shape \[2\]"):
        x.grad = nnkit.ones(2, device=device)
    with pytest.raises(TypeError, match="Tensor or None"):
        x.grad = [1.0, 2.0, 3.0]
    x.grad = None


def test_retain_grad_and_hooks_on_tensor_without_grad(device):
    t = nnkit.ones(3, device=device)
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        t.retain_grad()
    with pytest.raises(RuntimeError, match="doesn't require grad"):
        t.register_hook(lambda g: g)


# ---------------------------------------------------------------- indexing
def test_index_out_of_range(device):
    a = nnkit.ones(2, 3, device=device)
    with pytest.raises(IndexError, match=r"index 5 is out of bounds.*size 2.*\(2, 3\)"):
        a[5]
    with pytest.raises(IndexError, match="out of bounds"):
        a[0, -4]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        a[nnkit.tensor([0, 2], device=device)]


def test_index_bad_types(device):
    a = nnkit.ones(2, 3, device=device)
    with pytest.raises(IndexError, match="integer or boolean"):
        a[nnkit.tensor([0.5], device=device)]
    with pytest.raises(IndexError, match="unsupported index type str"):
        a["x"]


def test_boolean_mask_shape_mismatch(device):
    a = nnkit.ones(2, 3, device=device)
    with pytest.raises(IndexError, match=r"boolean mask \(3,\).*\(2,\)"):
        a[nnkit.tensor([True, False, True], device=device)]
    with pytest.raises(IndexError, match=r"boolean mask \(2,\).*\(3,\).*dimension 1"):
        a[:, nnkit.tensor([True, False], device=device)]


def test_setitem_errors(device):
    a = nnkit.zeros(2, 3, device=device)
    with pytest.raises(IndexError, match="setitem.*out of bounds"):
        a[9] = 1.0
    with pytest.raises(nnkit.ShapeError, match=r"setitem.*value shape \(4,\)"):
        a[0] = nnkit.ones(4, device=device)
    assert a.sum().item() == 0.0


def test_gather_and_index_select_errors(device):
    a = nnkit.ones(2, 3, device=device)
    with pytest.raises(TypeError, match="gather: index must be an integer"):
        a.gather(1, nnkit.tensor([[0.0]], device=device))
    with pytest.raises(nnkit.ShapeError, match="same number of dimensions"):
        a.gather(1, nnkit.tensor([0], device=device))
    with pytest.raises(TypeError, match="index_select"):
        a.index_select(0, nnkit.tensor([[0, 1]], device=device))
    with pytest.raises(nnkit.ShapeError, match="repeat_interleave"):
        a.repeat_interleave(nnkit.tensor([1, 2, 3], device=device), dim=0)


def test_masked_fill_requires_bool_mask(device):
    with pytest.raises(TypeError, match="bool"):
        nnkit.ones(2, device=device).masked_fill(nnkit.tensor([1, 0], device=device), 0.0)


def test_tensors_are_not_picklable():
    import pickle

    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(nnkit.ones(2))
