"""The zoo's totals against published figures, and the same network through PyTorch and ONNX."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nnperf import zoo
from nnperf.ir.export import export_onnx
from nnperf.ir.importers import from_onnx, from_torch
from nnperf.ir.metrics import layer_metrics, network_metrics
from nnperf.zoo import zoo_network

# (GMACs, M params) as published; each checked within 1%.
PUBLISHED = {
    "resnet18": (1.814, 11.69),
    "resnet34": (3.67, 21.8),
    "vgg16": (15.47, 138.36),
    "vgg11": (7.61, 132.86),
    "vgg19": (19.63, 143.67),
    "mobilenet_v1": (0.569, 4.23),
    "mobilenet_v2": (0.300, 3.50),
    "squeezenet1_0": (0.82, 1.248),
    "squeezenet1_1": (0.35, 1.235),
    "alexnet": (0.714, 61.1),
    "googlenet": (1.5, 6.6),  # torchvision variant: BN, 3x3 in the "5x5" branch, no aux heads
    "tiny_yolo_v2": (3.49, 15.86),  # darknet: 6.97 BFLOPs = 3.49 GMACs
    # activations and data movement; torchvision lists these MACs as "GFLOPS"
    "shufflenet_v2_x1_0": (0.146, 2.28),  # IR: 144.9 M MACs (-0.75%), 2,278,604 params
    "mobilenet_v3_large": (0.217, 5.48),  # IR: 216.6 M MACs, 5,483,032 params (SE FCs as 1x1 convs)
}
# resizing, normalisation and attention
PUBLISHED.update({
    "convnext_tiny": (4.46, 28.59),  # torchvision: 4.46 GFLOPS (counted as MACs); ours 4.471 with 1x1-conv biases
    "vit_tiny": (1.26, 5.72),  # DeiT-Tiny/16 (fvcore, attention products included); ours 1.258
    # Ultralytics YOLOv8n at 640: 8.7 GFLOPs of the BN-fused model, counted by thop as 2 x conv weight MACs
    # (no bias, no BN) -> 4.35 GMACs; 3,157,200 params unfused with BN, of which the DFL's 16 fixed weights
    # are post-processing here. Ours: 4,372,665,600 MACs (+0.52%; 1,209,600 of them the head's bias adds),
    # 3,157,184 params (BN's weight and bias counted, as in the unfused model)
    "yolov8n": (4.35, 3.1572),
})


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_macs_and_params(name):
    gmacs, mparams = PUBLISHED[name]
    m = network_metrics(zoo_network(name))
    assert m.macs / 1e9 == pytest.approx(gmacs, rel=0.01)
    assert m.params / 1e6 == pytest.approx(mparams, rel=0.01)


def test_ir_params_equal_torch_parameters():
    for entry in zoo.entries():
        with torch.device("meta"):
            module = entry.factory()
        expected = sum(p.numel() for p in module.parameters())
        assert network_metrics(zoo_network(entry.name)).params == expected, entry.name


def test_resnet18_layer_counts():
    net = zoo_network("resnet18")
    counts = {op.value: n for op, n in net.op_counts().items()}
    # 20 convs (17 3x3/7x7 + 3 downsample), 20 BN, 17 ReLU, 8 adds, 1 max pool, 1 GAP, flatten, FC
    assert counts == {"conv": 20, "batch_norm": 20, "relu": 17, "add": 8, "max_pool": 1,
                      "global_avg_pool": 1, "flatten": 1, "linear": 1}


@pytest.mark.slow
@pytest.mark.parametrize("name", zoo.names())
def test_onnx_export_round_trip(name, tmp_path):
    """Exported to ONNX and imported back, a zoo network keeps its layers and metrics, and ORT runs it."""
    import onnxruntime as ort

    entry = zoo.get(name)
    module, x = entry.build(), entry.example_input()
    path = export_onnx(module, x, tmp_path / f"{name}.onnx")
    via_torch = from_torch(module, x, name=name)
    via_onnx = from_onnx(path)
    assert [layer.op for layer in via_onnx] == [layer.op for layer in via_torch]
    assert [layer.output_shape for layer in via_onnx] == [layer.output_shape for layer in via_torch]
    assert [layer.attrs for layer in via_onnx] == [layer.attrs for layer in via_torch]
    for a, b in zip(via_torch, via_onnx):
        ma, mb = layer_metrics(a), layer_metrics(b)
        assert (ma.macs, ma.ops, ma.params, ma.mem_ops) == (mb.macs, mb.ops, mb.params, mb.mem_ops), a.name
    # the file is a faithful, runnable export
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        want = module(x).numpy()
    # deep random-weight networks accumulate float32 differences between the two runtimes;
    # a wrong export is off by the output's own scale, far beyond 1% of it
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * float(np.abs(want).max()))


# resizing, normalisation and attention
def _conv3x3(c_in: int, c_out: int, side: int) -> tuple[int, int]:
    """(MACs, params) of a padded 3x3 convolution with bias on a side x side map."""
    return (9 * c_in + 1) * c_out * side * side, (9 * c_in + 1) * c_out


def test_unet_macs_and_params_from_the_architecture():
    """U-Net, 4 levels, base 32, 3 -> 2 channels, 256x256, padded: summed layer by layer."""
    widths, sides = [32, 64, 128, 256, 512], [256, 128, 64, 32, 16]
    macs = params = 0
    for level, (c, side) in enumerate(zip(widths, sides)):  # contracting path: double 3x3 convs
        for c_in in (3 if level == 0 else widths[level - 1], c):
            m, p = _conv3x3(c_in, c, side)
            macs, params = macs + m, params + p
    for level in reversed(range(4)):  # expanding path
        c, side = widths[level], sides[level]
        # 2x2/2 up-convolution 2c -> c: 2*2*c MACs per input element of the 2c x side/2 x side/2 map, + bias
        macs += 2 * 2 * c * (2 * c * (side // 2) ** 2) + c * side * side
        params += 2 * c * c * 2 * 2 + c
        for c_in in (2 * c, c):  # after the concat with the skip: 2c -> c, c -> c
            m, p = _conv3x3(c_in, c, side)
            macs, params = macs + m, params + p
    macs += (32 + 1) * 2 * 256 * 256  # 1x1 head to 2 classes with bias
    params += 32 * 2 + 2
    m = network_metrics(zoo_network("unet"))
    assert (m.macs, m.params) == (macs, params) == (12_093_358_080, 7_760_130)


def test_yolov8n_layer_counts_and_output():
    net = zoo_network("yolov8n")
    counts = {op.value: n for op, n in net.op_counts().items()}
    # 57 Conv-BN-SiLU: 7 downsampling, 8 C2f x 2, 10 bottlenecks (6 backbone, 4 neck) x 2, SPPF 2,
    # head 3 scales x 2 branches x 2; + 6 head 1x1 convs with bias. One chunk (2 SLICEs) per C2f;
    # concats: 8 C2f, SPPF, 4 neck, 3 per-scale head outputs + 1 over the scales; adds: backbone bottlenecks
    assert (counts["conv"], counts["batch_norm"], counts["silu"]) == (57 + 6, 57, 57)
    assert 57 == 7 + 8 * 2 + 10 * 2 + 2 + 3 * 2 * 2
    assert (counts["slice"], counts["concat"], counts["add"]) == (8 * 2, 8 + 1 + 4 + 3 + 1, 1 + 2 + 2 + 1)
    assert (counts["max_pool"], counts["upsample"], counts["reshape"]) == (3, 2, 3)
    # 4 x 16 DFL box channels + 80 classes on 80x80 + 40x40 + 20x20 anchors
    assert net.layer(net.outputs[0]).output_shape == (1, 4 * 16 + 80, 80 * 80 + 40 * 40 + 20 * 20)


def test_vit_and_convnext_layer_counts():
    vit = {op.value: n for op, n in zoo_network("vit_tiny").op_counts().items()}
    # per block: 9 q/k/v + proj + 2 MLP 1x1 convs, 3 heads x 2 products and a softmax, 2 layer norms
    assert (vit["conv"], vit["matmul"], vit["softmax"], vit["layer_norm"], vit["constant"]) == (
        1 + 12 * 12, 12 * 6, 12 * 3, 12 * 2 + 1, 2)
    convnext = {op.value: n for op, n in zoo_network("convnext_tiny").op_counts().items()}
    # 18 blocks (3+3+9+3) of dw, 2 pointwise, LN, GELU, layer scale, add; stem + 3 downsamples; head LN
    assert (convnext["conv"], convnext["layer_norm"], convnext["gelu"], convnext["scale"]) == (
        18 * 3 + 4, 18 + 4 + 1, 18, 18)
