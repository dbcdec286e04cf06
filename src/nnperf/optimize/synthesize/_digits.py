"""A real trained CNN to synthesise programs for: a small VGG-style network on scikit-learn's digits.

Inexact arithmetic (Cappuccino, Motamedi et al.) can only be judged against an accuracy budget on a network that
has learned something; the zoo's networks carry random weights. :func:`train_digits` trains :class:`DigitsCNN`
offline in seconds on this machine, holding out part of the digits as the :class:`ValidationSet` the
accuracy is measured on, and :func:`cached_digits` keeps the trained weights in a file so it is trained once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nnperf.optimize.synthesize._data import DIGITS_SIDE_PX, ValidationSet, digits_set
from nnperf.optimize.synthesize._errors import SynthesisError

DIGITS_CLASSES = 10
"""The digits 0..9."""

BATCH_SIZE = 64
"""Samples per training step."""

LEARNING_RATE = 1e-2
"""Adam's initial learning rate, decayed to 0 along a cosine over the training steps."""

SHIFT_PX = 2
"""The largest random shift (pixels, each axis) of a training image: the augmentation."""

DEFAULT_HOLDOUT = 0.3
"""The fraction of the digits held out of training as the validation set."""

CACHE_FORMAT = "nnperf-digits-cnn"
"""The ``format`` entry of a file :func:`cached_digits` writes."""

CACHE_VERSION = 1
"""The version of that file's layout and of :class:`DigitsCNN`'s parameters (raise it when either changes); a
file of another version is retrained and overwritten."""


def _conv_bn_relu(in_channels: int, out_channels: int) -> list[nn.Module]:
    """A 3x3 convolution (padding 1, no bias: the batch norm has one), batch norm and ReLU."""
    return [nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False), nn.BatchNorm2d(out_channels), nn.ReLU()]


class DigitsCNN(nn.Module):
    """Five 3x3 convolutions with batch norm and ReLU, two max pools, global average pooling and a linear classifier.

    conv(1->w), conv(w->w), maxpool 2, conv(w->2w), conv(2w->2w), maxpool 2, conv(2w->4w), average pool,
    linear(4w->10), for ``width`` w. It takes ``(N, 1, size, size)`` inputs (``size`` >= 8) and returns the
    10 class logits; global pooling makes it run on any size, ``size`` records the one it was built for.
    """

    def __init__(self, size: int = 32, width: int = 16) -> None:
        super().__init__()
        _check_positive_int("size", size, DIGITS_SIDE_PX)
        _check_positive_int("width", width, 1)
        self.size = size
        self.width = width
        self.features = nn.Sequential(
            *_conv_bn_relu(1, width), *_conv_bn_relu(width, width), nn.MaxPool2d(2),
            *_conv_bn_relu(width, 2 * width), *_conv_bn_relu(2 * width, 2 * width), nn.MaxPool2d(2),
            *_conv_bn_relu(2 * width, 4 * width),
        )
        self.classifier = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, DIGITS_CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The class logits ``(N, 10)`` of the images ``x`` ``(N, 1, H, W)``."""
        return self.classifier(self.features(x))


def _check_positive_int(name: str, value: object, minimum: int) -> None:
    """Raises :class:`SynthesisError` unless ``value`` is an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SynthesisError(f"digits CNN: {name} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True, eq=False)
class TrainedDigits:
    """A trained :class:`DigitsCNN`, how it was trained and how accurate it is on digits it never saw."""

    module: nn.Module
    """The network, in eval mode (batch norm uses its running statistics)."""
    size: int
    """Input side in pixels: the network takes ``(N, 1, size, size)``."""
    width: int
    """Channels of the first convolution."""
    epochs: int
    seed: int
    """Seeds the weights' initialisation, the digits' order, the train/validation split and the batches."""
    train_accuracy: float
    """Top-1 accuracy on the training digits, in [0, 1], in eval mode."""
    validation: ValidationSet
    """The held-out digits (never trained on), with their labels."""
    validation_accuracy: float
    """Top-1 accuracy on ``validation``, in [0, 1]."""
    train_s: float
    """Seconds the training took (when it was trained, for a loaded one), evaluation not included."""


def train_digits(size: int = 32, width: int = 16, epochs: int = 8, seed: int = 0,
                 holdout: float = DEFAULT_HOLDOUT) -> TrainedDigits:
    """A :class:`DigitsCNN` trained on the digits at ``size`` x ``size``, holding out a ``holdout`` fraction.

    Adam (:data:`LEARNING_RATE`, cosine decay), cross-entropy, batches of :data:`BATCH_SIZE`, each image shifted
    by up to :data:`SHIFT_PX` pixels; ``epochs`` passes over the training digits. Everything random is seeded by
    ``seed`` inside a forked torch RNG, so the caller's random state is left as it was; torch's thread count
    is left as it is. Takes a few seconds on 2 cores for size 16, width 8 and tens of seconds for the defaults.
    """
    _check_positive_int("epochs", epochs, 1)
    if not 0.0 < holdout < 1.0:
        raise SynthesisError(f"digits CNN: the held-out fraction must lie strictly between 0 and 1, got {holdout!r}")
    train_set, validation = digits_split(size, seed, holdout)
    module, train_s = seeded_fit(lambda: DigitsCNN(size, width), train_set, epochs, seed)
    return TrainedDigits(module, size, width, epochs, seed, accuracy(module, train_set), validation,
                         accuracy(module, validation), train_s)


def digits_split(size: int, seed: int, holdout: float = DEFAULT_HOLDOUT) -> tuple[ValidationSet, ValidationSet]:
    """The training digits and the held-out validation digits for ``size`` and ``seed``: deterministic."""
    return digits_set(size, seed).split(1.0 - holdout, seed)


def seeded_fit(build: Callable[[], nn.Module], train_set: ValidationSet, epochs: int,
               seed: int) -> tuple[nn.Module, float]:
    """A module from ``build`` trained on ``train_set`` for ``epochs`` epochs, with its initialisation and batches
    seeded by ``seed`` inside a forked torch RNG (the caller's random state is left as it was), in eval mode, and
    the seconds the training took."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = build()
        started = time.perf_counter()
        _fit(module, train_set, epochs, torch.Generator().manual_seed(seed))
        train_s = time.perf_counter() - started
    module.eval()
    return module, train_s


def _fit(module: nn.Module, train_set: ValidationSet, epochs: int, generator: torch.Generator) -> None:
    """Trains ``module`` in place on ``train_set`` for ``epochs`` epochs, batches drawn with ``generator``."""
    inputs = torch.from_numpy(train_set.inputs)
    assert train_set.labels is not None  # digits always carry labels
    labels = torch.from_numpy(train_set.labels)
    steps_per_epoch = -(-len(train_set) // BATCH_SIZE)
    optimizer = torch.optim.Adam(module.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * steps_per_epoch)
    module.train()
    for _ in range(epochs):
        order = torch.randperm(len(train_set), generator=generator)
        for batch in order.split(BATCH_SIZE):
            loss = F.cross_entropy(module(_shifted(inputs[batch], generator)), labels[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()


def _shifted(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each image of ``images`` (N, 1, H, W) moved by a random whole number of pixels in [-SHIFT_PX, SHIFT_PX]
    along each axis, the uncovered border filled with 0 (the digits' background)."""
    count, _, height, width = images.shape
    padded = F.pad(images, (SHIFT_PX, SHIFT_PX, SHIFT_PX, SHIFT_PX))
    offsets = torch.randint(0, 2 * SHIFT_PX + 1, (count, 2), generator=generator)
    return torch.stack([padded[i, :, dy:dy + height, dx:dx + width] for i, (dy, dx) in enumerate(offsets.tolist())])


@torch.no_grad()
def predictions(module: nn.Module, data: ValidationSet, batch_size: int = 256) -> np.ndarray:
    """The top-1 classes (int64, shape (N,)) ``module`` gives the inputs of ``data``, in batches."""
    inputs = torch.from_numpy(data.inputs)
    classes = [module(chunk).argmax(dim=1) for chunk in inputs.split(batch_size)]
    return torch.cat(classes).numpy()


def accuracy(module: nn.Module, data: ValidationSet) -> float:
    """The fraction of ``data`` whose label is ``module``'s top-1 class (``data`` must carry labels)."""
    if data.labels is None:
        raise SynthesisError(f"validation set {data.name!r} has no labels to measure accuracy against")
    return float((predictions(module, data) == data.labels).mean())


def cached_digits(path: Path, size: int = 32, width: int = 16, epochs: int = 8, seed: int = 0) -> TrainedDigits:
    """The trained digits CNN stored at ``path`` when its settings match, else one trained now and stored there.

    The file (``torch.save`` of a dict of plain values and the state dict, loadable with ``weights_only=True``)
    carries :data:`CACHE_FORMAT`, :data:`CACHE_VERSION`, the settings (size, width, epochs, seed, holdout), the
    accuracies and the training time; a file of our format whose version or settings differ is retrained and
    overwritten (written to a temporary file and renamed, so a killed run leaves no half file). The validation
    set is not stored: it is rebuilt from :func:`digits_set` and the seeded split. A file that cannot be read,
    or that is not of our format, raises :class:`SynthesisError` rather than being overwritten.
    """
    path = Path(path)
    settings = {"size": size, "width": width, "epochs": epochs, "seed": seed, "holdout": DEFAULT_HOLDOUT}
    if path.exists():
        stored = _read_cache(path)
        if stored.get("version") == CACHE_VERSION and all(stored.get(k) == v for k, v in settings.items()):
            return _from_cache(stored)
    trained = train_digits(size, width, epochs, seed, DEFAULT_HOLDOUT)
    _write_cache(path, trained, settings)
    return trained


def _read_cache(path: Path) -> dict[str, Any]:
    """The dict stored at ``path`` by :func:`cached_digits` (checked to be of our format)."""
    try:
        stored = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch.load raises pickle, zip and runtime errors alike for a bad file
        reason = (str(error).strip().splitlines() or [""])[0]  # torch's message runs on for a dozen lines
        raise SynthesisError(f"digits CNN cache {str(path)!r} cannot be read ({type(error).__name__}: {reason}); "
                             f"delete it to train again") from error
    if not isinstance(stored, dict) or stored.get("format") != CACHE_FORMAT:
        raise SynthesisError(f"{str(path)!r} is not a digits CNN cache (expected a dict with format "
                             f"{CACHE_FORMAT!r}); not overwriting it, pass another path")
    return stored


def _from_cache(stored: dict[str, Any]) -> TrainedDigits:
    """The :class:`TrainedDigits` a cache dict describes, its validation set rebuilt."""
    size, width, epochs, seed = (int(stored[key]) for key in ("size", "width", "epochs", "seed"))
    module = DigitsCNN(size, width)
    module.load_state_dict(stored["state_dict"])
    module.eval()
    _, validation = digits_split(size, seed, float(stored["holdout"]))
    return TrainedDigits(module, size, width, epochs, seed, float(stored["train_accuracy"]), validation,
                         float(stored["validation_accuracy"]), float(stored["train_s"]))


def _write_cache(path: Path, trained: TrainedDigits, settings: dict[str, object]) -> None:
    """Stores ``trained`` at ``path`` (parent folders created), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = {"format": CACHE_FORMAT, "version": CACHE_VERSION, **settings,
              "state_dict": trained.module.state_dict(), "train_accuracy": trained.train_accuracy,
              "validation_accuracy": trained.validation_accuracy, "train_s": trained.train_s}
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    torch.save(stored, partial)
    os.replace(partial, path)
