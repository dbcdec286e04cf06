"""The zoo registry: every built-in network, its canonical input and provenance."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from nnperf.errors import UnknownModelError
from nnperf.zoo.alexnet import alexnet
from nnperf.zoo.allcnn import allcnn_c
from nnperf.zoo.convnext import convnext_tiny
from nnperf.zoo.googlenet import googlenet
from nnperf.zoo.mobilenet import mobilenet_v1, mobilenet_v2
from nnperf.zoo.mobilenet_v3 import mobilenet_v3_large
from nnperf.zoo.previousnet import CONFIGURATIONS, previousnet01, previousnet02, previousnet03
from nnperf.zoo.previousnet04 import previousnet04
from nnperf.zoo.previousnet05 import previousnet05
from nnperf.zoo.previousnet06 import previousnet06
from nnperf.zoo.resnet import resnet18, resnet34
from nnperf.zoo.shufflenet import shufflenet_v2_x1_0
from nnperf.zoo.simplenet import simplenet
from nnperf.zoo.squeezenet import squeezenet1_0, squeezenet1_1
from nnperf.zoo.tinyyolo import tiny_yolo_v2
from nnperf.zoo.unet import unet
from nnperf.zoo.vgg import vgg11, vgg16, vgg19
from nnperf.zoo.vit import vit_tiny
from nnperf.zoo.yolo import yolov8n


@dataclass(frozen=True)
class ZooEntry:
    """One built-in network.

    ``name`` is the lower-case CLI name, ``input_shape`` the canonical input
    with batch 1 (NCHW; N x length for PreVIousNet-02), ``variant`` says which variant of the architecture is
    built and where its layout comes from, ``factory`` builds it with random
    weights. ``calibration`` marks the networks built to profile a system's
    layers (PreVIousNet) rather than to be predicted: ``names()`` and
    ``entries()`` list the reference networks, ``calibration_names()`` and
    ``calibration_entries()`` the calibration ones.
    """

    name: str
    description: str
    input_shape: tuple[int, ...]
    variant: str
    factory: Callable[[], nn.Module]
    calibration: bool = False

    def build(self, seed: int = 0) -> nn.Module:
        """The network in eval mode, its random weights fixed by ``seed``.

        The global RNG state is left as it was.
        """
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = self.factory()
        return module.eval()

    def example_input(self, seed: int = 0) -> torch.Tensor:
        """A random tensor of ``input_shape`` drawn from a generator seeded with ``seed``."""
        generator = torch.Generator().manual_seed(seed)
        return torch.randn(self.input_shape, generator=generator)


_IMAGENET = (1, 3, 224, 224)
_CIFAR = (1, 3, 32, 32)

_ENTRIES: tuple[ZooEntry, ...] = (
    ZooEntry("alexnet", "AlexNet (Krizhevsky et al. 2012), ImageNet", _IMAGENET,
             "torchvision single-tower AlexNet (64-192-384-256-256, no LRN, adaptive 6x6 pool, dropout)",
             alexnet),
    ZooEntry("allcnn_c", "All-CNN-C (Springenberg et al. 2015), CIFAR-10", _CIFAR,
             "paper model C: ReLU after every conv except the final 1x1 to 10, input/stride-conv dropout, no BN",
             allcnn_c),
    ZooEntry("mobilenet_v1", "MobileNet v1 1.0 (Howard et al. 2017), ImageNet", _IMAGENET,
             "width 1.0, 224; conv-BN-ReLU, 13 depthwise-separable blocks, no conv bias",
             mobilenet_v1),
    ZooEntry("mobilenet_v2", "MobileNet v2 1.0 (Sandler et al. 2018), ImageNet", _IMAGENET,
             "torchvision MobileNetV2, width 1.0, ReLU6, dropout 0.2 before the FC",
             mobilenet_v2),
    ZooEntry("resnet18", "ResNet-18 (He et al. 2016), ImageNet", _IMAGENET,
             "torchvision ResNet-18 (BasicBlock, conv1x1+BN projection shortcuts)",
             resnet18),
    ZooEntry("resnet34", "ResNet-34 (He et al. 2016), ImageNet", _IMAGENET,
             "torchvision ResNet-34 (BasicBlock, conv1x1+BN projection shortcuts)",
             resnet34),
    ZooEntry("simplenet", "SimpleNet v1 (Hasanpour et al. 2016), CIFAR-100", _CIFAR,
             "13-layer 5.5M SimpleNet v1 as in the authors' PyTorch port (conv+BN+ReLU, global max pool),"
             " 100 classes, without the Dropout2d after pools",
             simplenet),
    ZooEntry("squeezenet1_0", "SqueezeNet 1.0 (Iandola et al. 2016), ImageNet", _IMAGENET,
             "torchvision SqueezeNet 1.0 (ceil-mode pools, conv1x1 classifier)",
             squeezenet1_0),
    ZooEntry("squeezenet1_1", "SqueezeNet 1.1 (Iandola et al. 2016), ImageNet", _IMAGENET,
             "torchvision SqueezeNet 1.1 (3x3/64 stem, early pooling)",
             squeezenet1_1),
    ZooEntry("tiny_yolo_v2", "Tiny YOLO v2 (Redmon & Farhadi 2017), PASCAL VOC", (1, 3, 416, 416),
             "darknet tiny-yolo-voc.cfg (1024-1024 head, 125-channel output), no region decoding",
             tiny_yolo_v2),
    ZooEntry("googlenet", "GoogLeNet / Inception v1 (Szegedy et al. 2015), ImageNet", _IMAGENET,
             "torchvision GoogLeNet (BN, 3x3 in the 5x5 branch, no aux heads)",
             googlenet),
    ZooEntry("vgg11", "VGG-11 (Simonyan & Zisserman 2015), ImageNet", _IMAGENET,
             "torchvision VGG-11 (configuration A), no BN",
             vgg11),
    ZooEntry("vgg16", "VGG-16 (Simonyan & Zisserman 2015), ImageNet", _IMAGENET,
             "torchvision VGG-16 (configuration D), no BN",
             vgg16),
    ZooEntry("vgg19", "VGG-19 (Simonyan & Zisserman 2015), ImageNet", _IMAGENET,
             "torchvision VGG-19 (configuration E), no BN",
             vgg19),
    # activations and data movement
    ZooEntry("shufflenet_v2_x1_0", "ShuffleNet V2 1.0x (Ma et al. 2018), ImageNet", _IMAGENET,
             "torchvision ShuffleNetV2 1.0x (chunk, concat, channel shuffle in 2 groups; mean pool)",
             shufflenet_v2_x1_0),
    ZooEntry("mobilenet_v3_large", "MobileNetV3-Large 1.0 (Howard et al. 2019), ImageNet", _IMAGENET,
             "torchvision MobileNetV3-Large, width 1.0 (SE as 1x1 convs with hard sigmoid, dropout 0.2)",
             mobilenet_v3_large),
    # resizing, normalisation and attention
    ZooEntry("unet", "U-Net (Ronneberger et al. 2015), segmentation, 2 classes", (1, 3, 256, 256),
             "4 levels, base 32 (32-512), padded 3x3 convs with ReLU, 2x2/2 transposed-conv upsampling, no BN",
             unet),
    ZooEntry("convnext_tiny", "ConvNeXt-Tiny (Liu et al. 2022), ImageNet", _IMAGENET,
             "depths 3-3-9-3, widths 96-768; 1x1 convs for the pointwise layers, LayerNorm over channels",
             convnext_tiny),
    ZooEntry("vit_tiny", "DeiT-Tiny/16 (Touvron et al. 2021), ImageNet", _IMAGENET,
             "192 wide, 3 heads, 12 blocks; tokens as a 1 x 197 channels-first map, per-head q/k/v 1x1 convs,"
             " mean of the tokens to the classifier",
             vit_tiny),
    ZooEntry("yolov8n", "YOLOv8n (Ultralytics 2023), COCO detection, 80 classes", (1, 3, 640, 640),
             "yolov8.yaml scale n (width 0.25, depth 0.33): Conv-BN-SiLU, C2f (chunk in halves), SPPF, PAN neck,"
             " Detect head to 64 DFL box + 80 class channels per scale; raw 1 x 144 x 8400 output, no DFL"
             " decode, no NMS",
             yolov8n),
)


def _configurations(number: str, factory: Callable[[int], nn.Module], variant: str) -> tuple[ZooEntry, ...]:
    """A PreVIousNet at the paper's four input sizes H x W x C (section V-C)."""
    return tuple(
        ZooEntry(f"previousnet{number}_{height}x{width}x{channels}",
                 f"PreVIousNet-{number} calibration network, input {height}x{width}x{channels} (HxWxC)",
                 (1, channels, height, width), variant, functools.partial(factory, channels), calibration=True)
        for height, width, channels in CONFIGURATIONS
    )


_CALIBRATION: tuple[ZooEntry, ...] = (
    *_configurations("01", previousnet01,
                     "PreVIous Fig. 4(a): 15 conv, 7 BN, 7 Scale, 7 ReLU, 6 pool, 5 eltwise, 5 concat in 4 levels"),
    ZooEntry("previousnet02", "PreVIousNet-02 calibration network, input vector 1x256", (1, 256),
             "PreVIous Fig. 4(b): 32 FC on lengths 256-4096, 10 and 1000, 12 softmax",
             previousnet02, calibration=True),
    *_configurations("03", previousnet03,
                     "nnperf extension: ReLU6, leaky ReLU, sigmoid, tanh, hard-swish, SiLU, mul, max, LRN, pad,"
                     " upsample, reshape, global max pool, grouped conv in 4 levels"),
    # activations and data movement
    *_configurations("04", previousnet04,
                     "nnperf extension: hard sigmoid, clip, PReLU, GELU, mish, softplus, log, exp, expand, channel"
                     " shuffle, slice, gather, transpose in 3 levels"),
    # resizing, normalisation and attention
    *(ZooEntry(f"previousnet05_{height}x{width}x{channels}",
               f"PreVIousNet-05 calibration network, input {height}x{width}x{channels} (HxWxC)",
               (1, channels, height, width),
               "nnperf extension: transposed and dilated conv, layer/group/instance norm, GELU, mean and"
               " max reductions, sub, div, pow, matmul (3-D and 4-D, transposed operands), softmax on any axis,"
               " class token and position embedding constants, bilinear upsample, in 2 levels",
               functools.partial(previousnet05, channels, height, width), calibration=True)
      for height, width, channels in CONFIGURATIONS),
)

_BLOCKS: tuple[ZooEntry, ...] = _configurations(
    "06", previousnet06, "nnperf extension, not calibrated by default: basic, bottleneck, inverted residual and fire"
                         " blocks, a strided, a depthwise and a 1x1 conv, chained as deployed CNNs chain them")
"""The calibration networks ``nnperf calibrate --blocks`` adds (PreVIousNet-06)."""

_BY_NAME: dict[str, ZooEntry] = {entry.name: entry for entry in _ENTRIES + _CALIBRATION + _BLOCKS}


def names() -> list[str]:
    """Names of the reference zoo networks (not the calibration ones), in registry order."""
    return [entry.name for entry in _ENTRIES]


def entries() -> list[ZooEntry]:
    """The reference zoo entries (not the calibration ones), in registry order."""
    return list(_ENTRIES)


def calibration_names() -> list[str]:
    """Names of the calibration networks (PreVIousNet-01 to -05 configurations), in registry order."""
    return [entry.name for entry in _CALIBRATION]


def block_calibration_names() -> list[str]:
    """Names of the calibration networks ``--blocks`` adds (PreVIousNet-06 configurations), in registry order."""
    return [entry.name for entry in _BLOCKS]


def calibration_entries() -> list[ZooEntry]:
    """The calibration entries, in registry order."""
    return list(_CALIBRATION)


def block_calibration_entries() -> list[ZooEntry]:
    """The entries ``nnperf calibrate --blocks`` adds (PreVIousNet-06), in registry order."""
    return list(_BLOCKS)


ALIASES: dict[str, str] = {"squeezenet_v11": "squeezenet1_1", "squeezenet_v10": "squeezenet1_0",
                           "googlenet_v1": "googlenet"}
"""Other names of zoo networks: those the CNNergy reference tables use (``nnperf accel``, ``partition``)."""


def _normalise(name: str) -> str:
    key = name.strip().lower().replace("-", "_")
    return ALIASES.get(key, key)


def get(name: str) -> ZooEntry:
    """The reference or calibration entry called ``name`` (case-insensitive, '-' accepted for '_', or one of
    its ``ALIASES``).

    Raises UnknownModelError listing the closest names, or all of them.
    """
    key = _normalise(name)
    entry = _BY_NAME.get(key)
    if entry is not None:
        return entry
    close = difflib.get_close_matches(key, list(_BY_NAME))
    if close:
        hint = "did you mean " + ", ".join(close) + "?"
    else:
        hint = "known models: " + ", ".join(list(_BY_NAME))
    raise UnknownModelError(f"unknown model {name!r}; {hint}")
