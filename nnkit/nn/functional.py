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
from nnkit.autograd.ops.activation_inplace import (
    celu_,
    elu_,
    hardtanh_,
    leaky_relu_,
    relu_,
    rrelu,
    rrelu_,
    selu_,
    threshold_,
)
from nnkit.autograd.ops.adaptive_max import (
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
)
from nnkit.autograd.ops.attention import scaled_dot_product_attention
from nnkit.autograd.ops.conv import conv1d, conv2d, conv3d
from nnkit.autograd.ops.conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d
from nnkit.autograd.ops.ctc import ctc_loss
from nnkit.autograd.ops.distance import cosine_similarity, pairwise_distance, pdist
from nnkit.autograd.ops.dropout_alpha import alpha_dropout, dropout3d, feature_alpha_dropout
from nnkit.autograd.ops.embedding_bag import embedding_bag
from nnkit.autograd.ops.fold import fold, unfold
from nnkit.autograd.ops.fractional_pool import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from nnkit.autograd.ops.grid_sample import affine_grid, grid_sample
from nnkit.autograd.ops.interpolate import interpolate, upsample_bilinear, upsample_nearest
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
from nnkit.autograd.ops.loss_extra import (
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from nnkit.autograd.ops.loss_multilabel import multilabel_margin_loss
from nnkit.autograd.ops.nn_extra import (
    bilinear,
    channel_shuffle,
    instance_norm,
    local_response_norm,
    pixel_shuffle,
    pixel_unshuffle,
    rms_norm,
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
from nnkit.autograd.ops.out_variants import install as _install_out_variants
from nnkit.autograd.ops.pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from nnkit.autograd.ops.pool3d import adaptive_avg_pool3d, avg_pool3d, max_pool3d
from nnkit.autograd.ops.pool_more import (
    lp_pool1d,
    lp_pool2d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    upsample,
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
    "rrelu",
    # in place (torch's F.relu_ & co.)
    "relu_",
    "elu_",
    "leaky_relu_",
    "hardtanh_",
    "threshold_",
    "rrelu_",
    "celu_",
    "selu_",
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
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "embedding",
    "embedding_bag",
    "one_hot",
    "pad",
    "unfold",
    "fold",
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
    # distances
    "pdist",
    "pairwise_distance",
    "cosine_similarity",
    # more losses
    "soft_margin_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "multilabel_soft_margin_loss",
    "multilabel_margin_loss",
    "multi_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "ctc_loss",
    # shuffles, RMS norm
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "rms_norm",
    "instance_norm",
    "local_response_norm",
    "bilinear",
    # 3-d pooling
    "max_pool3d",
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    # resampling
    "interpolate",
    "grid_sample",
    "affine_grid",
    "upsample_nearest",
    "upsample_bilinear",
    "upsample",
    # power-average pooling and max unpooling
    "lp_pool1d",
    "lp_pool2d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    # transposed convolutions
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    # adaptive max pooling
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
]

_install_out_variants(globals(), "nn.functional")  # out= where PyTorch has it
