"""Layers: ``Module`` and ``Parameter``, containers, and every built-in layer and loss.

Also reachable as ``nnkit.nn`` (with ``nnkit.nn.functional``, ``nnkit.nn.init`` and
``nnkit.nn.utils``). Whole networks (``Model``, ``Sequential``, functional models) sit
above the layers and the training loop, in :mod:`nnkit.models`; they are public as
``nnkit.Model``, ``nnkit.Sequential`` and ``nnkit.nn.Sequential``, not here.
"""

from nnkit.layers.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    LeakyReLU,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from nnkit.layers.activation_more import SELU, Hardtanh, ReLU6, RReLU
from nnkit.layers.attention import MultiheadAttention, TransformerEncoderLayer
from nnkit.layers.container import ModuleDict, ModuleList
from nnkit.layers.conv import Conv1d, Conv2d
from nnkit.layers.dropout import Dropout
from nnkit.layers.embedding import Embedding
from nnkit.layers.input_layer import Input, InputLayer
from nnkit.layers.linear import Dense, Flatten, Identity, Linear
from nnkit.layers.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from nnkit.layers.merge import (
    Add,
    Average,
    Concatenate,
    Dot,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    dot,
    maximum,
    minimum,
    multiply,
    subtract,
)
from nnkit.layers.module import Module, NotBuiltError, Parameter
from nnkit.layers.naming import clear_session
from nnkit.layers.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from nnkit.layers.pool import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from nnkit.layers.recurrent import GRU, LSTM, RNN
from nnkit.layers.symbolic import KerasTensor

__all__ = [
    "Module",
    "Parameter",
    "NotBuiltError",
    "ModuleList",
    "ModuleDict",
    "Linear",
    "Dense",
    "Identity",
    "Flatten",
    "Conv1d",
    "Conv2d",
    "MaxPool2d",
    "AvgPool2d",
    "AdaptiveAvgPool2d",
    "Dropout",
    "BatchNorm1d",
    "BatchNorm2d",
    "LayerNorm",
    "Embedding",
    "RNN",
    "LSTM",
    "GRU",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "ReLU",
    "LeakyReLU",
    "GELU",
    "SiLU",
    "ELU",
    "Sigmoid",
    "Tanh",
    "Softmax",
    "LogSoftmax",
    "Softplus",
    "Hardswish",
    "Hardsigmoid",
    "Mish",
    "GLU",
    "PReLU",
    "CELU",
    "Softsign",
    "Threshold",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "Hardtanh",
    "ReLU6",
    "SELU",
    "RReLU",
    "CrossEntropyLoss",
    "NLLLoss",
    "MSELoss",
    "L1Loss",
    "HuberLoss",
    "SmoothL1Loss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "Input",
    "InputLayer",
    "KerasTensor",
    "clear_session",
    "Concatenate",
    "Add",
    "Subtract",
    "Multiply",
    "Average",
    "Maximum",
    "Minimum",
    "Dot",
    "concatenate",
    "add",
    "subtract",
    "multiply",
    "average",
    "maximum",
    "minimum",
    "dot",
]
