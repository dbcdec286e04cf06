"""Terminal tables for networks and their metrics."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from nnperf.ir import Network
from nnperf.ir.metrics import DType, LayerMetrics, NetworkMetrics
from nnperf.report._format import shape_text, si


def layer_type(network: Network, name: str) -> str:
    """The op type, with the convolution flavour where it has one (conv/depthwise)."""
    layer = network.layer(name)
    kind = layer.conv_kind
    return f"{layer.op.value}/{kind.value}" if kind is not None else layer.op.value


def metrics_table(network: Network, metrics: NetworkMetrics, dtype: DType = DType.FLOAT32) -> Table:
    """Per-layer table (name, type, shapes, MACs, params, memOPs) with a totals row."""
    table = Table(title=f"{network.name}: {len(network)} layers", title_justify="left", show_footer=True)
    table.add_column("#", justify="right", footer="")
    table.add_column("layer", footer="total")
    table.add_column("type")
    table.add_column("input", footer=", ".join(shape_text(s.shape) for s in network.inputs))
    table.add_column("output")
    table.add_column("MACs", justify="right", footer=si(metrics.macs))
    table.add_column("ops", justify="right", footer=si(metrics.ops))
    table.add_column("params", justify="right", footer=si(metrics.params))
    table.add_column("memOPs", justify="right", footer=si(metrics.mem_ops))
    table.add_column(f"mem ({dtype.value})", justify="right", footer=si(metrics.mem_bytes(dtype), "B"))
    for index, (layer, m) in enumerate(zip(network.layers, metrics.layers), start=1):
        table.add_row(
            str(index),
            layer.name,
            layer_type(network, layer.name),
            " + ".join(shape_text(s) for s in layer.input_shapes),
            shape_text(layer.output_shape),
            si(m.macs) if m.macs else "-",
            si(m.ops) if m.ops else "-",
            si(m.params) if m.params else "-",
            si(m.mem_ops),
            si(m.mem_bytes(dtype), "B"),
        )
    return table


def layer_metrics_dict(network: Network, m: LayerMetrics, dtype: DType) -> dict[str, Any]:
    layer = network.layer(m.name)
    return {
        "name": m.name,
        "op": m.op.value,
        "conv_kind": layer.conv_kind.value if layer.conv_kind else None,
        "inputs": list(layer.inputs),
        "input_shapes": [list(s) for s in layer.input_shapes],
        "output_shape": list(layer.output_shape),
        "macs": m.macs,
        "ops": m.ops,
        "params": m.params,
        "n_input": m.n_input,
        "n_output": m.n_output,
        "mem_ops": m.mem_ops,
        "mem_ops_im2col": m.mem_ops_im2col,
        "mem_bytes": m.mem_bytes(dtype),
    }


def metrics_document(network: Network, metrics: NetworkMetrics, dtype: DType = DType.FLOAT32) -> dict[str, Any]:
    """The machine-readable form of ``nnperf inspect`` (versioned)."""
    return {
        "format": "nnperf-inspect",
        "version": 1,
        "network": network.name,
        "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in network.inputs],
        "dtype": dtype.value,
        "layers": [layer_metrics_dict(network, m, dtype) for m in metrics.layers],
        "totals": {
            "layers": len(network),
            "macs": metrics.macs,
            "ops": metrics.ops,
            "params": metrics.params,
            "mem_ops": metrics.mem_ops,
            "mem_ops_im2col": metrics.mem_ops_im2col,
            "mem_bytes": metrics.mem_bytes(dtype),
            "param_bytes": metrics.param_bytes(dtype),
        },
    }
