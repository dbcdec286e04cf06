"""Tensor shapes and the arithmetic on them: element counts, output sizes of windows, broadcasting.

Shapes include the batch dimension; 4-D activations are NCHW.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Shape = tuple[int, ...]


def numel(shape: Shape) -> int:
    """Number of elements of a tensor of this shape."""
    return math.prod(shape)


def shape_text(shape: Shape) -> str:
    """(1, 3, 224, 224) -> '1x3x224x224', the form nnperf prints and parses shapes in."""
    return "x".join(str(d) for d in shape)


def same_padding(sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                 lower: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The padding (begins, ends) per spatial axis that ONNX's ``auto_pad`` SAME_UPPER (or SAME_LOWER, ``lower``)
    gives: each output side is ceil(size / stride), the odd pad element at the end (the beginning)."""
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max(0, (-(-size // s) - 1) * s + d * (k - 1) + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(large if lower else small)
        ends.append(small if lower else large)
    return tuple(begins), tuple(ends)


def conv_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1) -> int:
    """Output length of a convolution along one spatial axis (floor rule)."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def pool_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, ceil_mode: bool) -> int:
    """Output length of a pooling window along one axis, with PyTorch/ONNX's ceil rule.

    In ceil mode the last window must start inside the input or its left padding.
    """
    span = size + pad_begin + pad_end - kernel
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def conv_transpose_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                               output_padding: int = 0, dilation: int = 1) -> int:
    """Output length of a transposed convolution along one spatial axis (PyTorch's and ONNX's rule)."""
    return (size - 1) * stride - pad_begin - pad_end + dilation * (kernel - 1) + output_padding + 1


def broadcast(shapes: Sequence[Shape]) -> Shape:
    """The shape that ``shapes`` broadcast to (NumPy's rule); ValueError when they do not broadcast."""
    rank = max(len(s) for s in shapes)
    result = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            raise ValueError("not broadcastable")
        result.append(dims.pop() if dims else 1)
    return tuple(result)
