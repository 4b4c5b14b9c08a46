"""The functional ops the layers call as ``F.conv2d(...)``.

The same functions as :mod:`nnkit.nn.functional` (which re-exports them for users), imported
here from :mod:`nnkit.autograd.ops` directly: ``nnkit.nn`` sits above the layers.
"""

from nnkit.autograd.ops.activation import (
    elu,
    gelu,
    hardtanh,
    leaky_relu,
    log_softmax,
    mish,
    relu,
    relu6,
    selu,
    silu,
    softmax,
    softplus,
)
from nnkit.autograd.ops.activation_extra import (
    celu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    prelu,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
)
from nnkit.autograd.ops.activation_inplace import rrelu
from nnkit.autograd.ops.conv import (
    conv1d,
    conv2d,
)
from nnkit.autograd.ops.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from nnkit.autograd.ops.nn_misc import (
    dropout,
    embedding,
    linear,
    pad,
)
from nnkit.autograd.ops.norm import (
    batch_norm,
    layer_norm,
)
from nnkit.autograd.ops.pool import (
    adaptive_avg_pool2d,
    avg_pool2d,
    max_pool2d,
)

__all__ = [
    "elu",
    "hardtanh",
    "relu",
    "relu6",
    "rrelu",
    "selu",
    "gelu",
    "leaky_relu",
    "log_softmax",
    "mish",
    "silu",
    "softmax",
    "softplus",
    "conv1d",
    "conv2d",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "huber_loss",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
    "dropout",
    "embedding",
    "linear",
    "pad",
    "batch_norm",
    "layer_norm",
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "max_pool2d",
    "celu",
    "glu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "prelu",
    "softshrink",
    "softsign",
    "tanhshrink",
    "threshold",
]
