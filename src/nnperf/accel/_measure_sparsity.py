"""Zero fractions of every tensor, measured by running a network on images (NeuPart Fig. 9).

The network runs layer by layer through nnperf's PyTorch graph builder. The IR carries shapes, not
trained weights, so the weights are nnperf's seeded He-initialised ones: the measured zero fractions
are those of that network, not of a trained one (trained ReLU networks are usually sparser deep
down). A tensor's sparsity is the mean over the images of its fraction of exact zeros.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from nnperf.accel._from_ir import AccelMappingError
from nnperf.ir import Network

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


def sample_images() -> list[Path]:
    """A real photograph that ships with matplotlib (Grace Hopper), for runs without ``--images``."""
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    return [path] if path.exists() else []


def image_files(paths: Sequence[str | Path]) -> list[Path]:
    """Image files named directly or found (not recursively) in the folders named."""
    files: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            files += sorted(p for p in entry.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        elif entry.is_file():
            files.append(entry)
        else:
            raise AccelMappingError(f"{entry}: no such image file or folder")
    if not files:
        raise AccelMappingError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {', '.join(map(str, paths))}")
    return files


def load_image(path: Path, height: int, width: int) -> np.ndarray:
    """An RGB image resized to height x width and normalised with ImageNet's mean and std, as NCHW float32."""
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise AccelMappingError(f"{path}: not an image OpenCV can read")
    image = cv2.resize(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), (width, height), interpolation=cv2.INTER_AREA)
    x = (image.astype(np.float32) / 255.0 - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)
    return x.transpose(2, 0, 1)[None].copy()


def measure_sparsity(network: Network, images: Sequence[Path], seed: int = 0,
                     progress: Callable[[int, int], None] | None = None) -> dict[str, float]:
    """The zero fraction of the network input and every layer output, averaged over ``images``."""
    import torch

    from nnperf.measure.backends import build_torch

    if len(network.inputs) != 1 or len(network.inputs[0].shape) != 4 or network.inputs[0].shape[1] != 3:
        raise AccelMappingError(f"{network.name}: measuring sparsity on images needs one 3-channel NCHW input")
    if not images:
        raise AccelMappingError(f"{network.name}: no images to measure sparsity on")
    spec = network.inputs[0]
    _, _, height, width = spec.shape
    module = build_torch(network, seed=seed)
    steps = list(module.layer_modules())
    totals: dict[str, float] = {}
    with torch.inference_mode():
        for done, path in enumerate(images):
            values = {spec.name: torch.from_numpy(load_image(path, height, width))}
            for layer, layer_module in steps:
                values[layer.name] = layer_module(*(values[n] for n in layer.inputs))
            for name, tensor in values.items():
                totals[name] = totals.get(name, 0.0) + float((tensor == 0).float().mean())
            if progress is not None:
                progress(done + 1, len(images))
    return {name: min(total / len(images), 0.999999) for name, total in totals.items()}
