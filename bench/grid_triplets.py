"""Write the (c, f, im, groups) shapes of Mulder et al.'s Table 7 architectures, the seed of the paper's grid.

Run (needs torchvision, which nnperf itself does not; nothing is downloaded: the definitions only):
    /path/to/venv-with-torchvision/bin/python bench/grid_triplets.py [--out src/nnperf/primitives/tables/table7_shapes.csv]

Mulder et al. 3.2.1 collect the c, k (our f) and im triplets of the convolutions of a wide pool of networks
(their Table 7: 475 unique triplets), then combine each with every kernel size and stride of Table 1
(``nnperf.primitives.paper_grid``). This script does the first half: it traces every 2-D convolution of each
architecture below on its ImageNet input (299 x 299 for Inception v3, 224 x 224 for the rest) and writes the
distinct (c, f, im, groups) rows, each with the architectures it occurs in. The groups column keeps depthwise
and grouped convolutions what they are (the paper's triplets have none; its MobileNet and ShuffleNet rows are
depthwise all the same).

Left out on purpose: DenseNet and ResNeXt. Their 121-layer and 50 32x4d members are two of the three
architectures the primitive selection benchmark holds out (bench/select_networks.py), and a grid built from
their shapes would have taught the cost model their layers. MobileNet (v1) is not in torchvision; it is written
here from Howard et al. (2017), Table 1.
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Callable
from pathlib import Path

import torch
import torchvision.models as tvm
from torch import nn

ARCHITECTURES: dict[str, tuple[Callable[[], nn.Module], int]] = {
    "alexnet": (tvm.alexnet, 224),
    "vgg11": (tvm.vgg11, 224),
    "vgg13": (tvm.vgg13, 224),
    "vgg16": (tvm.vgg16, 224),
    "vgg19": (tvm.vgg19, 224),
    "inception_v1": (lambda: tvm.googlenet(aux_logits=False, init_weights=False), 224),
    "inception_v3": (lambda: tvm.inception_v3(aux_logits=False, init_weights=False), 299),
    "resnet18": (tvm.resnet18, 224),
    "resnet34": (tvm.resnet34, 224),
    "resnet50": (tvm.resnet50, 224),
    "resnet101": (tvm.resnet101, 224),
    "resnet152": (tvm.resnet152, 224),
    "squeezenet1_0": (tvm.squeezenet1_0, 224),
    "squeezenet1_1": (tvm.squeezenet1_1, 224),
    "shufflenet_v2_x0_5": (tvm.shufflenet_v2_x0_5, 224),
    "shufflenet_v2_x1_0": (tvm.shufflenet_v2_x1_0, 224),
    "shufflenet_v2_x1_5": (tvm.shufflenet_v2_x1_5, 224),
    "shufflenet_v2_x2_0": (tvm.shufflenet_v2_x2_0, 224),
    "mobilenet_v1": (lambda: mobilenet_v1(), 224),
}
"""Mulder et al. Table 7, less DenseNet and ResNeXt (held out), each with its input size."""


def mobilenet_v1(width: float = 1.0) -> nn.Module:
    """MobileNet (Howard et al. 2017, Table 1): a 3x3 stride-2 convolution, then 13 depthwise separable blocks."""
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), *[(512, 1)] * 5, (1024, 2), (1024, 1)]
    c = int(32 * width)
    layers: list[nn.Module] = [nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
    for out, stride in plan:
        out = int(out * width)
        layers += [nn.Conv2d(c, c, 3, stride, 1, groups=c, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                   nn.Conv2d(c, out, 1, bias=False), nn.BatchNorm2d(out), nn.ReLU()]
        c = out
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000))


def shapes(model: nn.Module, im: int) -> set[tuple[int, int, int, int]]:
    """The (c, f, im, groups) of every 2-D convolution that runs on a 1 x 3 x im x im input."""
    found: set[tuple[int, int, int, int]] = set()

    def hook(module: nn.Module, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
        x = inputs[0]
        assert isinstance(module, nn.Conv2d)
        found.add((x.shape[1], module.out_channels, max(x.shape[2], x.shape[3]), module.groups))

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model.eval()(torch.zeros(1, 3, im, im))
    for handle in handles:
        handle.remove()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("src/nnperf/primitives/tables/table7_shapes.csv"))
    args = parser.parse_args()
    where: dict[tuple[int, int, int, int], list[str]] = {}
    for name, (build, im) in ARCHITECTURES.items():
        for row in shapes(build(), im):
            where.setdefault(row, []).append(name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["c", "f", "im", "groups", "architectures"])
        for (c, f, im, groups), names in sorted(where.items()):
            writer.writerow([c, f, im, groups, " ".join(names)])
    print(f"{len(where)} distinct (c, f, im, groups) shapes from {len(ARCHITECTURES)} architectures -> {args.out}")


if __name__ == "__main__":
    main()
