"""Arrays as JSON values: base64 of their little-endian bytes with dtype and shape, so a round trip is exact."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import numpy as np

DTYPES = ("<f4", "<f8")
"""The stored element types: float32 (network weights) and float64 (least-squares coefficients)."""


def encode_array(array: np.ndarray) -> dict[str, Any]:
    """``{"dtype", "shape", "data"}`` of a float32 or float64 array; ``data`` is base64 of its little-endian bytes."""
    dtype = np.dtype(array.dtype).newbyteorder("<")
    if dtype.str not in DTYPES:
        raise ValueError(f"only float32 and float64 arrays are stored, not {array.dtype}")
    data = np.ascontiguousarray(array, dtype=dtype).tobytes()
    return {"dtype": dtype.str, "shape": list(array.shape), "data": base64.b64encode(data).decode("ascii")}


def decode_array(value: Mapping[str, Any]) -> np.ndarray:
    """The array ``encode_array`` stored (native byte order, writable); a ValueError names what is wrong."""
    dtype, shape = str(value["dtype"]), tuple(int(n) for n in value["shape"])
    if dtype not in DTYPES:
        raise ValueError(f"stored array dtype {dtype!r}; known: {', '.join(DTYPES)}")
    data = base64.b64decode(str(value["data"]), validate=True)
    expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if len(data) != expected:
        raise ValueError(f"a stored {dtype} array of shape {list(shape)} needs {expected} bytes, it has {len(data)}")
    return np.frombuffer(data, dtype=dtype).reshape(shape).astype(np.dtype(dtype).newbyteorder("="))
