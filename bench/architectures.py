"""Standard architectures that are not in nnperf's zoo, written here from their papers' definitions (torch, random
weights, nothing downloaded) and exported to ONNX, so that benchmarks can judge nnperf on networks it never saw.

Run: .venv/bin/python bench/architectures.py [--out bench/results/onnx] [NAME ...]

- densenet121: DenseNet-121 (Huang et al. 2017): growth 32, blocks 6-12-24-16, bottleneck 4x, compression 0.5;
  concatenations everywhere.
- resnext50_32x4d: ResNeXt-50 32x4d (Xie et al. 2017): ResNet-50's bottlenecks with 32-group 3x3 convolutions
  of width 4 per group.
- mnasnet1_0: MnasNet-A1 1.0 (Tan et al. 2019): inverted residuals with 3x3 and 5x5 depthwise kernels (no
  squeeze-and-excitation, as in torchvision's mnasnet1_0).
- regnetx_400mf: RegNetX-400MF (Radosavovic et al. 2020, Table 4 and Appendix C): stem 32, widths 32-64-160-384,
  depths 1-2-7-12, group width 16, bottleneck ratio 1 (X blocks: 1x1, grouped 3x3, 1x1, no SE).
- efficientnet_b0: EfficientNet-B0 (Tan & Le 2019, Table 1): MBConv blocks with squeeze-and-excitation (ratio
  0.25 of the block's input) and SiLU, stem 32, head 1280.

:data:`PUBLISHED` holds each paper's MACs and parameters; ``--check`` prints them next to the exported file's.

:func:`exported` writes (or reuses) ``OUT/NAME.onnx`` and returns its path; the importer reads it as any user's
file would be read.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

INPUT = (1, 3, 224, 224)


def _conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1, relu: bool = True,
             activation: type[nn.Module] = nn.ReLU) -> list[nn.Module]:
    layers: list[nn.Module] = [nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(c_out)]
    return layers + [activation()] if relu else layers


# ------------------------------------------------------------------------------------------------- DenseNet
class _DenseLayer(nn.Module):
    def __init__(self, c_in: int, growth: int, bottleneck: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(c_in), nn.ReLU(), nn.Conv2d(c_in, bottleneck * growth, 1, bias=False),
                                  nn.BatchNorm2d(bottleneck * growth), nn.ReLU(),
                                  nn.Conv2d(bottleneck * growth, growth, 3, padding=1, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.body(x)], 1)


def densenet121(growth: int = 32, blocks: Sequence[int] = (6, 12, 24, 16), init: int = 64, bottleneck: int = 4
                ) -> nn.Module:
    layers: list[nn.Module] = [*_conv_bn(3, init, 7, 2), nn.MaxPool2d(3, 2, 1)]
    c = init
    for i, count in enumerate(blocks):
        for _ in range(count):
            layers.append(_DenseLayer(c, growth, bottleneck))
            c += growth
        if i != len(blocks) - 1:
            layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
            c //= 2
    layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000)]
    return nn.Sequential(*layers)


# ------------------------------------------------------------------------------------------------- ResNeXt
class _Bottleneck(nn.Module):
    def __init__(self, c_in: int, planes: int, stride: int, groups: int, width_per_group: int) -> None:
        super().__init__()
        width = planes * width_per_group * groups // 64
        self.body = nn.Sequential(*_conv_bn(c_in, width, 1), *_conv_bn(width, width, 3, stride, groups),
                                  *_conv_bn(width, planes * 4, 1, relu=False))
        self.down = (nn.Sequential(*_conv_bn(c_in, planes * 4, 1, stride, relu=False))
                     if stride != 1 or c_in != planes * 4 else nn.Identity())
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.down(x))


def resnext50_32x4d(blocks: Sequence[int] = (3, 4, 6, 3), groups: int = 32, width_per_group: int = 4) -> nn.Module:
    layers: list[nn.Module] = [*_conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    c = 64
    for i, count in enumerate(blocks):
        planes = 64 * 2 ** i
        for j in range(count):
            layers.append(_Bottleneck(c, planes, 2 if j == 0 and i > 0 else 1, groups, width_per_group))
            c = planes * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000)]
    return nn.Sequential(*layers)


# -------------------------------------------------------------------------------------------------- MnasNet
class _InvertedResidual(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = c_in * expand
        self.body = nn.Sequential(*_conv_bn(c_in, mid, 1), *_conv_bn(mid, mid, kernel, stride, groups=mid),
                                  *_conv_bn(mid, c_out, 1, relu=False))
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


MNASNET_STAGES = ((24, 3, 2, 3, 3), (40, 5, 2, 3, 3), (80, 5, 2, 6, 3), (96, 3, 1, 6, 2), (192, 5, 2, 6, 4),
                  (320, 3, 1, 6, 1))
"""(channels, kernel, first stride, expansion, repeats) of MnasNet-A1 1.0's stages after its stem."""


def mnasnet1_0() -> nn.Module:
    layers: list[nn.Module] = [*_conv_bn(3, 32, 3, 2), *_conv_bn(32, 32, 3, 1, groups=32),
                               *_conv_bn(32, 16, 1, relu=False)]
    c = 16
    for channels, kernel, stride, expand, repeats in MNASNET_STAGES:
        for j in range(repeats):
            layers.append(_InvertedResidual(c, channels, kernel, stride if j == 0 else 1, expand))
            c = channels
    layers += [*_conv_bn(c, 1280, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


# ------------------------------------------------------------------------------------------------- RegNetX
class _XBlock(nn.Module):
    """RegNet's X block (Radosavovic et al. 2020, Fig. 4): ResNeXt's bottleneck with a fixed group width."""

    def __init__(self, c_in: int, c_out: int, stride: int, group_width: int, bottleneck_ratio: float) -> None:
        super().__init__()
        width = round(c_out * bottleneck_ratio)
        self.body = nn.Sequential(*_conv_bn(c_in, width, 1), *_conv_bn(width, width, 3, stride, width // group_width),
                                  *_conv_bn(width, c_out, 1, relu=False))
        self.down = (nn.Sequential(*_conv_bn(c_in, c_out, 1, stride, relu=False))
                     if stride != 1 or c_in != c_out else nn.Identity())
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.down(x))


def regnetx_400mf(widths: Sequence[int] = (32, 64, 160, 384), depths: Sequence[int] = (1, 2, 7, 12),
                  group_width: int = 16, bottleneck_ratio: float = 1.0, stem: int = 32) -> nn.Module:
    """RegNetX-400MF: the widths and depths its quantized linear rule gives (d=22, w0=24, wa=24.48, wm=2.54),
    the first block of every stage at stride 2."""
    layers: list[nn.Module] = [*_conv_bn(3, stem, 3, 2)]
    c = stem
    for width, depth in zip(widths, depths, strict=True):
        for j in range(depth):
            layers.append(_XBlock(c, width, 2 if j == 0 else 1, group_width, bottleneck_ratio))
            c = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000)]
    return nn.Sequential(*layers)


# -------------------------------------------------------------------------------------------- EfficientNet
class _SqueezeExcite(nn.Module):
    """Squeeze-and-excitation (Hu et al. 2018) as EfficientNet uses it: SiLU inside, sigmoid gate."""

    def __init__(self, channels: int, squeezed: int) -> None:
        super().__init__()
        self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(channels, squeezed, 1), nn.SiLU(),
                                  nn.Conv2d(squeezed, channels, 1), nn.Sigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(x)


class _MBConv(nn.Module):
    """Mobile inverted bottleneck (Sandler et al. 2018) with squeeze-and-excitation, EfficientNet's block."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, expand: int, se_ratio: float = 0.25) -> None:
        super().__init__()
        mid = c_in * expand
        expansion = _conv_bn(c_in, mid, 1, activation=nn.SiLU) if expand != 1 else []
        self.body = nn.Sequential(*expansion, *_conv_bn(mid, mid, kernel, stride, groups=mid, activation=nn.SiLU),
                                  _SqueezeExcite(mid, max(1, int(c_in * se_ratio))),
                                  *_conv_bn(mid, c_out, 1, relu=False))
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


EFFICIENTNET_B0_STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
"""(expansion, kernel, first stride, channels, repeats) of EfficientNet-B0's MBConv stages (Tan & Le 2019, Table 1)."""


def efficientnet_b0() -> nn.Module:
    layers: list[nn.Module] = [*_conv_bn(3, 32, 3, 2, activation=nn.SiLU)]
    c = 32
    for expand, kernel, stride, channels, repeats in EFFICIENTNET_B0_STAGES:
        for j in range(repeats):
            layers.append(_MBConv(c, channels, kernel, stride if j == 0 else 1, expand))
            c = channels
    layers += [*_conv_bn(c, 1280, 1, activation=nn.SiLU), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


ARCHITECTURES: dict[str, Callable[[], nn.Module]] = {
    "densenet121": densenet121, "resnext50_32x4d": resnext50_32x4d, "mnasnet1_0": mnasnet1_0,
    "regnetx_400mf": regnetx_400mf, "efficientnet_b0": efficientnet_b0}

PUBLISHED: dict[str, tuple[float, float]] = {
    "densenet121": (2.83e9, 8.0e6),  # the paper plots but does not tabulate them: torchvision's model table
    "resnext50_32x4d": (4.2e9, 25.0e6),  # Xie et al. 2017, Table 1: 4.2 GFLOPs (multiply-adds), 25.0 M params
    # Tan et al. 2019, Table 1 gives A1 with SE 312 M multiply-adds, 3.9 M params; without SE as here, torchvision's
    # mnasnet1_0 has 0.31 G and 4.38 M
    "mnasnet1_0": (312e6, 4.38e6),
    "regnetx_400mf": (400e6, 5.2e6),  # Radosavovic et al. 2020, Table 4 (flops counted as multiply-adds)
    "efficientnet_b0": (390e6, 5.3e6),  # Tan & Le 2019, Table 2: 0.39 B FLOPs (multiply-adds), 5.3 M params
}
"""Each paper's (MACs, parameters) of :data:`ARCHITECTURES`; the papers say FLOPs for multiply-adds."""


def exported(name: str, out: Path = Path("bench/results/onnx")) -> Path:
    """``out/NAME.onnx``, exported now from :data:`ARCHITECTURES` (seed 0) unless it is there already."""
    from nnperf.ir.export import export_onnx

    path = out / f"{name}.onnx"
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(0)
        export_onnx(ARCHITECTURES[name](), torch.zeros(INPUT), path)
    return path


def check(name: str, out: Path = Path("bench/results/onnx")) -> tuple[float, float]:
    """The MACs and parameters nnperf reads from the export of ``name``, each over the paper's figure."""
    from nnperf.api import load_model
    from nnperf.ir.metrics import network_metrics

    metrics = network_metrics(load_model(exported(name, out)))
    macs, params = PUBLISHED[name]
    return metrics.macs / macs, metrics.params / params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"default: all of {', '.join(ARCHITECTURES)}")
    parser.add_argument("--out", type=Path, default=Path("bench/results/onnx"))
    parser.add_argument("--check", action="store_true",
                        help="print each export's MACs and parameters (as nnperf reads them) against the paper's")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(ARCHITECTURES))
    if unknown:
        parser.error(f"unknown architecture {', '.join(unknown)}; known: {', '.join(ARCHITECTURES)}")
    for name in args.names or ARCHITECTURES:
        print(exported(name, args.out))
        if args.check:
            macs, params = check(name, args.out)
            print(f"  MACs {macs:.1%} and parameters {params:.1%} of the published {PUBLISHED[name][0] / 1e6:.0f} M "
                  f"and {PUBLISHED[name][1] / 1e6:.1f} M")


if __name__ == "__main__":
    main()
