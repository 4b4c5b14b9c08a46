"""The Module forms of the functional ops (issue #13) against PyTorch's modules: same
parameters give the same outputs and gradients (float64); reprs and configs."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit import nn

torch = pytest.importorskip("torch")

# (class name, constructor kwargs, input specs, takes dtype=) — a spec is (shape, kind).
R, POS, SIGN, BIN = "real", "pos", "sign", "binary"
CASES = [
    ("ConvTranspose1d", dict(in_channels=4, out_channels=6, kernel_size=3), [((2, 4, 5), R)], 1),
    (
        "ConvTranspose1d",
        dict(
            in_channels=4,
            out_channels=6,
            kernel_size=3,
            stride=2,
            padding=1,
            output_padding=1,
            groups=2,
            bias=False,
            dilation=2,
        ),
        [((2, 4, 5), R)],
        1,
    ),
    (
        "ConvTranspose2d",
        dict(in_channels=2, out_channels=3, kernel_size=(2, 3), stride=2, padding=(0, 1)),
        [((2, 2, 4, 3), R)],
        1,
    ),
    (
        "ConvTranspose3d",
        dict(in_channels=2, out_channels=2, kernel_size=2, stride=(1, 2, 1)),
        [((1, 2, 3, 2, 3), R)],
        1,
    ),
    ("RMSNorm", dict(normalized_shape=(3, 4)), [((2, 3, 4), R)], 1),
    ("RMSNorm", dict(normalized_shape=4, eps=1e-3, elementwise_affine=False), [((2, 4), R)], 1),
    ("InstanceNorm1d", dict(num_features=3), [((2, 3, 5), R)], 1),
    ("InstanceNorm1d", dict(num_features=3, affine=True), [((3, 5), R)], 1),
    ("InstanceNorm1d", dict(num_features=3, affine=True, bias=False), [((2, 3, 5), R)], 1),
    (
        "InstanceNorm2d",
        dict(num_features=3, affine=True, track_running_stats=True),
        [((2, 3, 4, 4), R)],
        1,
    ),
    ("InstanceNorm3d", dict(num_features=2), [((2, 2, 3, 3, 3), R)], 1),
    ("LocalResponseNorm", dict(size=3, alpha=0.1, beta=0.5, k=2.0), [((2, 5, 3, 3), R)], 0),
    ("PixelShuffle", dict(upscale_factor=2), [((1, 8, 3, 3), R)], 0),
    ("PixelUnshuffle", dict(downscale_factor=2), [((1, 2, 4, 6), R)], 0),
    ("Upsample", dict(scale_factor=2), [((1, 2, 3, 3), R)], 0),
    ("Upsample", dict(size=(5, 7), mode="bilinear", align_corners=True), [((1, 2, 3, 3), R)], 0),
    ("Upsample", dict(scale_factor=1.5, mode="linear"), [((1, 2, 4), R)], 0),
    ("ChannelShuffle", dict(groups=3), [((2, 6, 2, 2), R)], 0),
    ("AdaptiveMaxPool1d", dict(output_size=3), [((2, 3, 7), R)], 0),
    ("AdaptiveMaxPool2d", dict(output_size=(2, None)), [((2, 3, 5, 4), R)], 0),
    ("AdaptiveMaxPool3d", dict(output_size=2), [((1, 2, 5, 4, 3), R)], 0),
    ("MaxPool3d", dict(kernel_size=2, stride=1, padding=1), [((1, 2, 3, 4, 3), R)], 0),
    (
        "AvgPool3d",
        dict(kernel_size=2, padding=1, count_include_pad=False),
        [((1, 2, 3, 4, 3), R)],
        0,
    ),
    ("AdaptiveAvgPool3d", dict(output_size=(2, 3, 1)), [((1, 2, 5, 4, 3), R)], 0),
    ("CosineSimilarity", dict(dim=-1), [((3, 4), R), ((3, 4), R)], 0),
    ("PairwiseDistance", dict(p=3.0, keepdim=True), [((3, 4), R), ((3, 4), R)], 0),
    (
        "Bilinear",
        dict(in1_features=3, in2_features=4, out_features=5),
        [((6, 3), R), ((6, 4), R)],
        1,
    ),
    (
        "Bilinear",
        dict(in1_features=3, in2_features=2, out_features=2, bias=False),
        [((6, 3), R), ((6, 2), R)],
        1,
    ),
    ("KLDivLoss", dict(reduction="batchmean"), [((3, 4), R), ((3, 4), POS)], 0),
    ("KLDivLoss", dict(reduction="sum", log_target=True), [((3, 4), R), ((3, 4), R)], 0),
    ("SoftMarginLoss", dict(), [((3, 4), R), ((3, 4), SIGN)], 0),
    ("MultiLabelSoftMarginLoss", dict(reduction="none"), [((3, 4), R), ((3, 4), BIN)], 0),
    ("MultiMarginLoss", dict(p=2, margin=0.5), [((5, 4), R), ((5,), "classes")], 0),
    ("CosineEmbeddingLoss", dict(margin=0.2), [((5, 4), R), ((5, 4), R), ((5,), SIGN)], 0),
    (
        "MarginRankingLoss",
        dict(margin=0.1, reduction="sum"),
        [((5,), R), ((5,), R), ((5,), SIGN)],
        0,
    ),
    ("HingeEmbeddingLoss", dict(margin=0.5), [((3, 4), R), ((3, 4), SIGN)], 0),
    (
        "TripletMarginLoss",
        dict(margin=0.5, p=1.0, swap=True),
        [((5, 4), R), ((5, 4), R), ((5, 4), R)],
        0,
    ),
    ("TripletMarginWithDistanceLoss", dict(margin=2.0), [((5, 4), R), ((5, 4), R), ((5, 4), R)], 0),
    ("PoissonNLLLoss", dict(), [((3, 4), R), ((3, 4), POS)], 0),
    ("PoissonNLLLoss", dict(log_input=False, full=True), [((3, 4), POS), ((3, 4), POS)], 0),
    ("GaussianNLLLoss", dict(full=True), [((3, 4), R), ((3, 4), R), ((3, 4), POS)], 0),
]


def _data(rng, shape, kind):
    if kind == "classes":
        return rng.integers(0, 4, shape)
    raw = rng.standard_normal(shape)
    return {
        R: raw,
        POS: np.abs(raw) + 0.5,
        SIGN: np.where(raw > 0, 1.0, -1.0),
        BIN: (raw > 0).astype(np.float64),
    }[kind]


def _pair(name, kwargs, takes_dtype):
    extra = {"dtype": nnkit.float64} if takes_dtype else {}
    ours = getattr(nn, name)(**kwargs, **extra)
    theirs = getattr(torch.nn, name)(**kwargs, **({"dtype": torch.float64} if takes_dtype else {}))
    with torch.no_grad():
        for key, param in theirs.named_parameters():
            param.copy_(torch.tensor(dict(ours.named_parameters())[key].detach().numpy()))
    assert sorted(dict(ours.named_parameters())) == sorted(dict(theirs.named_parameters()))
    return ours, theirs


@pytest.mark.parametrize(
    "name,kwargs,specs,takes_dtype", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_module_matches_torch(name, kwargs, specs, takes_dtype):
    ours, theirs = _pair(name, kwargs, takes_dtype)
    rng = np.random.default_rng(7)
    arrays = [_data(rng, shape, kind) for shape, kind in specs]
    # Real inputs (and the first input) take gradients; targets of other kinds do not.
    grads = [i == 0 or kind == R for i, (_, kind) in enumerate(specs)]
    xs = [nnkit.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    txs = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    out, ref = ours(*xs), theirs(*txs)
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-7, atol=1e-10)
    weights = rng.standard_normal(tuple(ref.shape))
    (out * nnkit.tensor(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    for x, tx in zip(xs, txs):
        if tx.requires_grad:
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-10)
    ours_params = dict(ours.named_parameters())
    for key, param in theirs.named_parameters():
        np.testing.assert_allclose(
            ours_params[key].grad.numpy(), param.grad.numpy(), rtol=1e-7, atol=1e-10
        )
    for key, buffer in theirs.named_buffers():
        np.testing.assert_allclose(dict(ours.named_buffers())[key].numpy(), buffer.numpy())


@pytest.mark.parametrize(
    "name,kwargs,specs,takes_dtype", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_repr_and_config(name, kwargs, specs, takes_dtype):
    ours = getattr(nn, name)(**kwargs)
    theirs = getattr(torch.nn, name)(**kwargs)
    if "reduction" not in kwargs:  # nnkit's losses print a non-default reduction
        assert repr(ours) == repr(theirs)
    config = ours.get_config()
    for key, value in kwargs.items():
        assert config[key] == value
    rebuilt = type(ours).from_config(config)
    assert repr(rebuilt) == repr(ours)
    assert [p.shape for p in rebuilt.parameters()] == [p.shape for p in ours.parameters()]


def test_param_shapes_and_init_follow_torch():
    conv = nn.ConvTranspose2d(6, 4, (2, 3), groups=2)
    assert conv.weight.shape == (6, 2, 2, 3) and conv.bias.shape == (4,)
    bound = 1 / np.sqrt(2 * 2 * 3)  # fan_in from weight.size(1) * kernel, as torch
    assert np.abs(conv.weight.detach().numpy()).max() <= bound
    assert np.abs(conv.bias.detach().numpy()).max() <= bound
    bil = nn.Bilinear(5, 3, 2)
    assert bil.weight.shape == (2, 5, 3)
    assert np.abs(bil.weight.detach().numpy()).max() <= 1 / np.sqrt(5)
    inorm = nn.InstanceNorm2d(3)
    assert inorm.weight is None and inorm.running_mean is None
    np.testing.assert_array_equal(nn.RMSNorm([2, 3]).weight.detach().numpy(), np.ones((2, 3)))


def test_instance_norm_tracks_running_stats_like_torch():
    ours, theirs = _pair("InstanceNorm1d", dict(num_features=2, track_running_stats=True), 1)
    x = np.random.default_rng(1).standard_normal((4, 2, 6)) * 3 + 1
    ours(nnkit.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy())
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy())
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(
        ours(nnkit.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-7, atol=1e-10
    )


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="padding_mode"):
        nn.ConvTranspose1d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="divisible"):
        nn.ConvTranspose2d(3, 2, 3, groups=2)
    with pytest.raises(ValueError, match="reduction"):
        nn.SoftMarginLoss(reduction="avg")
    with pytest.raises(ValueError, match="expected"):
        nn.InstanceNorm2d(3)(nnkit.randn(3, 4))


@pytest.mark.parametrize("output_size", [(9, 10), (1, 3, 10, 9)])
def test_conv_transpose_output_size_matches_torch(output_size):
    ours, theirs = _pair(
        "ConvTranspose2d",
        dict(in_channels=2, out_channels=3, kernel_size=3, stride=2, padding=1),
        1,
    )
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5))
    out = ours(nnkit.tensor(x), output_size=output_size)
    ref = theirs(torch.tensor(x), output_size=output_size)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-7, atol=1e-10)
    with pytest.raises(ValueError, match="output size"):
        ours(nnkit.tensor(x), output_size=(11, 9))
