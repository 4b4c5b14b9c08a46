"""``nnkit.nn.functional``: the stateless neural-network functions (torch's ``F``).

Modules in :mod:`nnkit.layers` own parameters and call these; they are also usable
directly on Tensors::

    import nnkit.nn.functional as F
    y = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2)
    loss = F.cross_entropy(logits, labels, label_smoothing=0.1)

Each function lives with its Op in ``nnkit/autograd/ops/<family>.py``; this module
only re-exports them.
"""

from __future__ import annotations

from nnkit.autograd.ops.activation import (
    elu,
    gelu,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    tanh,
)
from nnkit.autograd.ops.attention import scaled_dot_product_attention
from nnkit.autograd.ops.conv import conv1d, conv2d, conv3d
from nnkit.autograd.ops.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from nnkit.autograd.ops.nn_misc import (
    dropout,
    dropout1d,
    dropout2d,
    embedding,
    linear,
    one_hot,
    pad,
)
from nnkit.autograd.ops.norm import batch_norm, group_norm, layer_norm, normalize
from nnkit.autograd.ops.pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from nnkit.autograd.ops.special import (
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

__all__ = [
    # activations
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "selu",
    "gelu",
    "silu",
    "mish",
    "sigmoid",
    "tanh",
    "hardtanh",
    "softplus",
    "logsigmoid",
    "softmax",
    "softmin",
    "log_softmax",
    "hardswish",
    "hardsigmoid",
    "glu",
    "prelu",
    "celu",
    "softsign",
    "threshold",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    # linear, convolution, pooling
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    # normalisation, dropout, embedding, padding
    "batch_norm",
    "layer_norm",
    "group_norm",
    "normalize",
    "dropout",
    "dropout1d",
    "dropout2d",
    "embedding",
    "one_hot",
    "pad",
    # attention
    "scaled_dot_product_attention",
    # losses
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "huber_loss",
    "smooth_l1_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
]
