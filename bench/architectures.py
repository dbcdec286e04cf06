"""Standard architectures that are not in nnperf's zoo, written here from their papers' definitions (torch, random
weights, nothing downloaded) and exported to ONNX, so that benchmarks can judge nnperf on networks it never saw.

Run: PYTHONPATH=src .venv/bin/python bench/architectures.py [--out bench/results/onnx] [NAME ...]

- densenet121: DenseNet-121 (Huang et al. 2017): growth 32, blocks 6-12-24-16, bottleneck 4x, compression 0.5;
  concatenations everywhere.
- resnext50_32x4d: ResNeXt-50 32x4d (Xie et al. 2017): ResNet-50's bottlenecks with 32-group 3x3 convolutions
  of width 4 per group.
- mnasnet1_0: MnasNet-A1 1.0 (Tan et al. 2019): inverted residuals with 3x3 and 5x5 depthwise kernels (no
  squeeze-and-excitation, as in torchvision's mnasnet1_0).

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


def _conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1, relu: bool = True
             ) -> list[nn.Module]:
    layers: list[nn.Module] = [nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(c_out)]
    return layers + [nn.ReLU(inplace=False)] if relu else layers


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


ARCHITECTURES: dict[str, Callable[[], nn.Module]] = {
    "densenet121": densenet121, "resnext50_32x4d": resnext50_32x4d, "mnasnet1_0": mnasnet1_0}


def exported(name: str, out: Path = Path("bench/results/onnx")) -> Path:
    """``out/NAME.onnx``, exported now from :data:`ARCHITECTURES` (seed 0) unless it is there already."""
    from nnperf.ir.export import export_onnx

    path = out / f"{name}.onnx"
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(0)
        export_onnx(ARCHITECTURES[name](), torch.zeros(INPUT), path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"default: all of {', '.join(ARCHITECTURES)}")
    parser.add_argument("--out", type=Path, default=Path("bench/results/onnx"))
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(ARCHITECTURES))
    if unknown:
        parser.error(f"unknown architecture {', '.join(unknown)}; known: {', '.join(ARCHITECTURES)}")
    for name in args.names or ARCHITECTURES:
        print(exported(name, args.out))


if __name__ == "__main__":
    main()
