"""The validation data a synthesised program's accuracy is measured on.

A :class:`ValidationSet` holds float32 inputs shaped ``(N, *sample_shape)`` and, when there are true labels, their
int64 classes. Where there are none it is a *proxy*: accuracy is then the agreement of a program's top-1 class
with the fp32 reference network's on the same inputs (Cappuccino, Motamedi et al., measures the accuracy loss of
inexact arithmetic against a budget; on a network with random weights only agreement with fp32 is meaningful).

Three sources, all offline:

- :func:`digits_set`: scikit-learn's bundled handwritten digits (1797 8x8 images, classes 0..9), resized;
- :func:`photo_set`: seeded random crops of the real photographs bundled with scikit-learn (``china.jpg``,
  ``flower.jpg``) and matplotlib (``grace_hopper.jpg``), a proxy set;
- files: a directory with ``inputs.npy`` and an optional ``labels.npy``, or an ``.npz`` with arrays ``inputs``
  and an optional ``labels`` (:func:`load_validation`).

torch, scikit-learn and matplotlib are imported inside the functions that need them: nothing heavy happens when
this module is imported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nnperf.optimize.synthesize._errors import ValidationDataError

DIGITS_COUNT = 1797
"""Images in scikit-learn's ``load_digits()``."""

DIGITS_SIDE_PX = 8
"""Side of a digits image as bundled (8x8 pixels)."""

DIGITS_MAX_VALUE = 16.0
"""The brightest pixel value of a bundled digits image (values are 0..16)."""

IMAGENET_MEAN = (0.485, 0.456, 0.406)
"""Per-channel (R, G, B) mean of ImageNet on [0, 1] pixel values, as torchvision's models expect."""

IMAGENET_STD = (0.229, 0.224, 0.225)
"""Per-channel (R, G, B) standard deviation of ImageNet on [0, 1] pixel values."""

GRAY_MEAN = sum(IMAGENET_MEAN) / 3
"""The mean a 1-channel photo is normalised with: the average of the three ImageNet channel means."""

GRAY_STD = sum(IMAGENET_STD) / 3
"""The standard deviation a 1-channel photo is normalised with: the average of the ImageNet channel stds."""

CROP_AREA_FRACTION = (0.1, 1.0)
"""The range a photo crop's area is drawn from, as a fraction of the photo's area (uniformly)."""

CROP_ASPECT_JITTER = (3 / 4, 4 / 3)
"""The range a crop's aspect ratio is scaled by around the wanted one (log-uniformly), as in a random resized crop."""

BUILTIN_SPECS = ("digits", "photos", "glyphs")
"""The names :func:`load_validation` takes for the bundled sets; any other string is a path."""

GLYPHS_HELD_OUT = 2400
"""Samples of the built-in ``glyphs`` validation set: a 1% budget is 24 answers."""


@dataclass(frozen=True, eq=False)
class ValidationSet:
    """Inputs (and, unless a proxy, labels) to measure a program's top-1 accuracy on.

    ``inputs`` is converted to a C-contiguous float32 array of shape ``(N, *sample_shape)`` (N >= 1, every value
    finite); ``labels``, when given, to int64 of shape ``(N,)``, every label a non-negative integer. ``proxy`` is
    True when accuracy is agreement with the fp32 reference instead of with true labels; a set without labels is
    always a proxy (``proxy`` is set to True when ``labels`` is None), and the labels of a proxy set, when given,
    are taken to be the reference's classes.

    Equality is identity (``eq=False``): arrays have no single truth value to compare or hash.
    """

    name: str
    inputs: np.ndarray
    labels: np.ndarray | None = None
    proxy: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", _checked_inputs(self.name, self.inputs))
        if self.labels is None:
            object.__setattr__(self, "proxy", True)
        else:
            object.__setattr__(self, "labels", _checked_labels(self.name, self.labels, len(self.inputs)))

    def __len__(self) -> int:
        """The number of samples N."""
        return int(self.inputs.shape[0])

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """The shape of one sample: ``inputs.shape`` without the batch, e.g. ``(1, 32, 32)``."""
        return tuple(int(d) for d in self.inputs.shape[1:])

    def split(self, fraction: float, seed: int = 0) -> tuple[ValidationSet, ValidationSet]:
        """Two disjoint parts that together hold every sample, after a shuffle seeded by ``seed``.

        The first part gets ``round(fraction * N)`` samples, kept within 1..N-1 so that neither part is empty;
        ``fraction`` must lie strictly between 0 and 1 and the set hold at least 2 samples.
        """
        if not 0.0 < fraction < 1.0:
            raise ValidationDataError(f"validation set {self.name!r}: a split fraction must lie strictly between 0 "
                                      f"and 1, got {fraction!r}")
        count = len(self)
        if count < 2:
            raise ValidationDataError(f"validation set {self.name!r}: a split needs at least 2 samples to put one "
                                      f"in each part, the set has {count}")
        first_count = min(max(round(fraction * count), 1), count - 1)
        order = np.random.default_rng(seed).permutation(count)
        first, second = order[:first_count], order[first_count:]
        return (self._subset(first, f"{self.name} (split {first_count} of {count}, seed {seed})"),
                self._subset(second, f"{self.name} (split rest {count - first_count} of {count}, seed {seed})"))

    def take(self, n: int) -> ValidationSet:
        """The first ``n`` samples (1 <= n <= N), in order."""
        if not 1 <= n <= len(self):
            raise ValidationDataError(f"validation set {self.name!r}: can take 1 to {len(self)} samples, "
                                      f"asked for {n}")
        return self._subset(np.arange(n), f"{self.name} (first {n})")

    def _subset(self, indices: np.ndarray, name: str) -> ValidationSet:
        """The samples at ``indices``, as a new set called ``name`` with the same proxy flag."""
        labels = None if self.labels is None else self.labels[indices]
        return ValidationSet(name, self.inputs[indices], labels, self.proxy)


def _checked_inputs(name: str, inputs: object) -> np.ndarray:
    """``inputs`` as a C-contiguous float32 array with a batch axis, at least one sample and only finite values."""
    try:
        array = np.ascontiguousarray(inputs, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise ValidationDataError(f"validation set {name!r}: inputs cannot be converted to float32 "
                                  f"({error})") from error
    if array.ndim < 2:
        raise ValidationDataError(f"validation set {name!r}: inputs need a batch axis and a sample shape, e.g. "
                                  f"(N, C, H, W) or (N, F); got shape {array.shape}")
    if array.shape[0] == 0:
        raise ValidationDataError(f"validation set {name!r}: empty validation set (inputs of shape {array.shape})")
    finite = np.isfinite(array)
    if not finite.all():
        bad_samples = np.flatnonzero(~finite.reshape(len(array), -1).all(axis=1))
        raise ValidationDataError(f"validation set {name!r}: inputs must be finite; {len(bad_samples)} of "
                                  f"{len(array)} samples hold NaN or infinity (the first: sample "
                                  f"{int(bad_samples[0])})")
    return array


def _checked_labels(name: str, labels: object, count: int) -> np.ndarray:
    """``labels`` as int64 of shape ``(count,)``: non-negative integers (floats only with integral values)."""
    array = np.asarray(labels)
    if array.shape != (count,):
        raise ValidationDataError(f"validation set {name!r}: labels must have shape ({count},), one per input, "
                                  f"got shape {array.shape}")
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
            or array.dtype == np.bool_):
        raise ValidationDataError(f"validation set {name!r}: labels must be integer classes, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.floating) and not (np.isfinite(array).all() and (array == np.round(array)).all()):
        raise ValidationDataError(f"validation set {name!r}: labels must be integer classes, got non-integral "
                                  f"{array.dtype} values")
    converted = array.astype(np.int64)
    if (converted < 0).any():
        raise ValidationDataError(f"validation set {name!r}: labels must be classes >= 0, found "
                                  f"{int(converted.min())}")
    return converted


def digits_set(size: int = 32, seed: int = 0) -> ValidationSet:
    """scikit-learn's handwritten digits, ``(1797, 1, size, size)`` float32 in [0, 1], labels 0..9.

    The bundled 8x8 images (values 0..16) are divided by 16 and resized to ``size`` x ``size`` with bilinear
    interpolation (``align_corners=False``); ``size`` must be at least 8 (a size of 8 keeps them as they are).
    The samples come in an order shuffled by ``seed``, so that :meth:`ValidationSet.take` is a fair sample and
    :meth:`ValidationSet.split` with the same seed is reproducible; the same ``seed`` gives the same order for
    every ``size``.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < DIGITS_SIDE_PX:
        raise ValidationDataError(f"digits: the image size must be an integer >= {DIGITS_SIDE_PX} (the digits are "
                                  f"{DIGITS_SIDE_PX}x{DIGITS_SIDE_PX} images, scaled up), got {size!r}")
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.asarray(digits.images, dtype=np.float32)[:, None] / DIGITS_MAX_VALUE
    if size != DIGITS_SIDE_PX:
        images = _resized(images, (size, size), antialias=False)
    order = np.random.default_rng(seed).permutation(len(images))
    return ValidationSet(f"digits {size}x{size}", images[order], np.asarray(digits.target)[order], proxy=False)


def glyph_set(count: int, side_px: int = 32, fonts: Sequence[Path] | None = None, seed: int = 0,
              name: str = "glyphs") -> ValidationSet:
    """``count`` labelled glyphs rendered from ``fonts`` (default: the system's) as a validation set (see
    :func:`nnperf.optimize.synthesize._glyphs.glyph_arrays`)."""
    from nnperf.optimize.synthesize._glyphs import glyph_arrays

    inputs, labels, font_count = glyph_arrays(count, side_px, fonts, seed)
    return ValidationSet(f"{name} {side_px}x{side_px} ({font_count} fonts)", inputs, labels)


def _resized(images: np.ndarray, size_px: tuple[int, int], antialias: bool) -> np.ndarray:
    """``images`` (N, C, H, W) resized to ``size_px`` (height, width) by bilinear interpolation.

    ``antialias`` low-pass filters a downscale (a photo crop of hundreds of pixels down to a network's input),
    which plain bilinear sampling would alias; it changes nothing when scaling up.
    """
    import torch
    import torch.nn.functional as F

    tensor = torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))
    resized = F.interpolate(tensor, size=size_px, mode="bilinear", align_corners=False, antialias=antialias)
    return resized.numpy()


def photo_set(shape: tuple[int, int, int], count: int = 64, seed: int = 0) -> ValidationSet:
    """``count`` seeded random crops of real photographs, shaped ``(count, *shape)``: a proxy set without labels.

    This is a proxy for accuracy on networks with random weights (no true labels exist for what they compute):
    accuracy is measured as agreement with the fp32 reference's outputs, on real images rather than noise, so
    that activations have the statistics of natural images. The photographs are the ones bundled with the
    installed libraries: scikit-learn's ``china.jpg`` and ``flower.jpg`` (427x640) and matplotlib's
    ``grace_hopper.jpg`` (600x512).

    Each crop picks a photo, an area of :data:`CROP_AREA_FRACTION` of it and an aspect ratio within
    :data:`CROP_ASPECT_JITTER` of the wanted ``W / H`` (clipped to the photo), and a position, all uniformly from
    a generator seeded by ``seed``; it is resized to ``(H, W)`` (bilinear, antialiased). ``shape`` is
    ``(C, H, W)`` with ``C`` 3 (RGB, normalised per channel with :data:`IMAGENET_MEAN` / :data:`IMAGENET_STD`)
    or 1 (the mean of R, G and B, normalised with :data:`GRAY_MEAN` / :data:`GRAY_STD`).
    """
    channels, height, width = _photo_shape(shape)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationDataError(f"photos: the number of crops must be an integer >= 1, got {count!r}")
    photos = _bundled_photos()
    rng = np.random.default_rng(seed)
    crops = np.empty((count, 3, height, width), dtype=np.float32)
    for i in range(count):
        photo = photos[int(rng.integers(len(photos)))]
        top, left, crop_h, crop_w = _crop_box(rng, photo.shape[0], photo.shape[1], width / height)
        crop = photo[top:top + crop_h, left:left + crop_w].transpose(2, 0, 1)[None]
        crops[i] = _resized(crop, (height, width), antialias=True)[0]
    if channels == 1:
        normalised = (crops.mean(axis=1, keepdims=True) - GRAY_MEAN) / GRAY_STD
    else:
        mean = np.asarray(IMAGENET_MEAN, dtype=np.float32)[:, None, None]
        std = np.asarray(IMAGENET_STD, dtype=np.float32)[:, None, None]
        normalised = (crops - mean) / std
    return ValidationSet(f"photos {channels}x{height}x{width} (seed {seed})", normalised, None, proxy=True)


def _photo_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """``shape`` checked as a photo's ``(C, H, W)``: C 1 or 3, H and W >= 1."""
    dims = tuple(shape)
    if len(dims) != 3 or dims[0] not in (1, 3) or min(dims) < 1:
        raise ValidationDataError(f"photos: the photographs are images of shape (C, H, W) with C = 3 (RGB) or 1 "
                                  f"(grayscale), and the network wants samples of shape {dims}")
    return int(dims[0]), int(dims[1]), int(dims[2])


def _bundled_photos() -> list[np.ndarray]:
    """The bundled photographs as float32 (H, W, 3) arrays in [0, 1]: china, flower, Grace Hopper."""
    import matplotlib
    import matplotlib.image
    from sklearn.datasets import load_sample_images

    photos = [np.asarray(image, dtype=np.float32) / 255.0 for image in load_sample_images().images]
    hopper_path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    if not hopper_path.is_file():
        raise ValidationDataError(f"photos: matplotlib's sample photograph {hopper_path} is missing; reinstall "
                                  f"matplotlib (its sample_data ships with it)")
    hopper = np.asarray(matplotlib.image.imread(hopper_path))
    # imread gives uint8 for a JPEG; scale it like the others (a float image would already be in [0, 1]).
    hopper = hopper.astype(np.float32) / 255.0 if hopper.dtype == np.uint8 else hopper.astype(np.float32)
    photos.append(hopper[..., :3])
    return photos


def _crop_box(rng: np.random.Generator, photo_h: int, photo_w: int, aspect: float) -> tuple[int, int, int, int]:
    """A random crop ``(top, left, height, width)`` inside a ``photo_h`` x ``photo_w`` photo.

    Its area is a uniform fraction (:data:`CROP_AREA_FRACTION`) of the photo's and its width / height ratio
    ``aspect`` scaled log-uniformly within :data:`CROP_ASPECT_JITTER`; each side is clipped to the photo.
    """
    area = rng.uniform(*CROP_AREA_FRACTION) * photo_h * photo_w
    log_low, log_high = math.log(CROP_ASPECT_JITTER[0]), math.log(CROP_ASPECT_JITTER[1])
    ratio = aspect * math.exp(rng.uniform(log_low, log_high))
    crop_h = min(max(round(math.sqrt(area / ratio)), 1), photo_h)
    crop_w = min(max(round(math.sqrt(area * ratio)), 1), photo_w)
    top = int(rng.integers(photo_h - crop_h + 1))
    left = int(rng.integers(photo_w - crop_w + 1))
    return top, left, crop_h, crop_w


def load_validation(spec: str | Path, sample_shape: tuple[int, ...], seed: int = 0) -> ValidationSet:
    """The validation set ``spec`` names, checked against the network's input ``sample_shape`` (without batch).

    - the string ``"digits"``: :func:`digits_set` with ``size = sample_shape[-1]``; the network must take
      ``(1, s, s)`` samples;
    - the string ``"photos"``: :func:`photo_set` (64 crops) of ``sample_shape``, which must be ``(C, H, W)``;
    - the string ``"glyphs"``: :data:`GLYPHS_HELD_OUT` characters rendered from the held-out quarter of the
      system's fonts (``nnperf.optimize.synthesize._glyphs``), for networks taking ``(1, s, s)`` samples;
    - a directory holding ``inputs.npy`` of shape ``(N, *sample_shape)`` and optionally ``labels.npy`` (N,);
    - a directory of one folder per class holding images (:func:`class_folder_set`: the usual image-folder
      layout);
    - an ``.npz`` file with an array ``inputs`` and optionally ``labels``.

    A file set without labels is a proxy set. ``seed`` orders the digits and draws the photo crops; files are
    taken as they are. Every problem raises :class:`ValidationDataError` naming the file, what was found and what
    the network wants. A :class:`~pathlib.Path` is always a path, even one called ``digits``.
    """
    wanted = tuple(int(d) for d in sample_shape)
    if isinstance(spec, str) and spec in BUILTIN_SPECS:
        return _builtin_set(spec, wanted, seed)
    path = Path(spec)
    if not path.exists():
        builtins = " or ".join(repr(name) for name in BUILTIN_SPECS)
        raise ValidationDataError(f"validation data {str(path)!r} does not exist (expected {builtins}, a directory "
                                  f"holding inputs.npy and optionally labels.npy, or an .npz file)")
    if path.is_dir() and not (path / "inputs.npy").exists() and _class_folders(path):
        return class_folder_set(path, wanted)
    if path.is_dir():
        inputs, labels = _directory_arrays(path)
    elif path.suffix == ".npz":
        inputs, labels = _npz_arrays(path)
    else:
        raise ValidationDataError(f"validation data {str(path)!r} is neither a directory (holding inputs.npy and "
                                  f"optionally labels.npy) nor an .npz file")
    if inputs.ndim < 1 or tuple(inputs.shape[1:]) != wanted:
        raise ValidationDataError(f"validation data {str(path)!r}: inputs have shape {inputs.shape}, the network "
                                  f"wants (N, {', '.join(str(d) for d in wanted)}) (samples of shape {wanted})")
    return ValidationSet(str(path), inputs, labels, proxy=labels is None)


def _builtin_set(spec: str, wanted: tuple[int, ...], seed: int) -> ValidationSet:
    """The bundled set ``spec`` (``"digits"``, ``"photos"`` or ``"glyphs"``) for samples of shape ``wanted``."""
    if spec == "glyphs":
        if len(wanted) != 3 or wanted[0] != 1 or wanted[1] != wanted[2]:
            raise ValidationDataError(f"validation data 'glyphs': the glyphs are 1-channel square images, of shape "
                                      f"(1, s, s), and the network wants samples of shape {wanted}")
        from nnperf.optimize.synthesize._glyphs import font_files, split_fonts

        fonts = font_files()
        held_out = split_fonts(fonts)[1] if len(fonts) >= 2 else fonts
        return glyph_set(GLYPHS_HELD_OUT, wanted[-1], held_out, seed=seed, name="glyphs, held-out fonts")
    if spec == "digits":
        if len(wanted) != 3 or wanted[0] != 1 or wanted[1] != wanted[2]:
            raise ValidationDataError(f"validation data 'digits': the digits are 1-channel square images, of shape "
                                      f"(1, s, s), and the network wants samples of shape {wanted}")
        return digits_set(size=wanted[-1], seed=seed)
    if len(wanted) != 3:
        raise ValidationDataError(f"validation data 'photos': the photographs are images of shape (C, H, W), and "
                                  f"the network wants samples of shape {wanted}")
    return photo_set(wanted, seed=seed)  # type: ignore[arg-type]  # three dims, checked above


IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
"""The image files :func:`class_folder_set` reads."""


def _class_folders(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def class_folder_set(directory: Path, sample_shape: tuple[int, ...]) -> ValidationSet:
    """The images under ``directory``'s class folders (one folder per class, sorted by name: label i is the
    i-th folder), each converted to the channels of ``sample_shape`` (1: grey, 3: RGB), resized to its height
    and width (bilinear) and scaled to [0, 1], in a sorted, reproducible order. A folder with no image, a
    file that is not an image, or a sample shape that is not (C, H, W) with C 1 or 3 raises
    :class:`ValidationDataError` naming it."""
    from PIL import Image, UnidentifiedImageError

    if len(sample_shape) != 3 or sample_shape[0] not in (1, 3):
        raise ValidationDataError(f"validation data {str(directory)!r}: image folders give (1, H, W) or (3, H, W) "
                                  f"samples, the network wants {sample_shape}")
    channels, height, width = sample_shape
    images, labels = [], []
    for label, folder in enumerate(_class_folders(directory)):
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise ValidationDataError(f"validation data {str(directory)!r}: class folder {folder.name!r} holds no "
                                      f"image ({', '.join(sorted(IMAGE_SUFFIXES))})")
        for file in files:
            try:
                with Image.open(file) as image:
                    converted = image.convert("L" if channels == 1 else "RGB").resize((width, height),
                                                                                     Image.Resampling.BILINEAR)
            except (OSError, UnidentifiedImageError) as error:
                raise ValidationDataError(f"validation data: {str(file)!r} is not a readable image ({error})") from None
            array = np.asarray(converted, dtype=np.float32) / 255.0
            images.append(array[None] if channels == 1 else array.transpose(2, 0, 1))
            labels.append(label)
    return ValidationSet(f"{directory} ({len(labels)} images, {label + 1} classes)", np.stack(images),
                         np.asarray(labels))


def _directory_arrays(directory: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """``inputs.npy`` and, when present, ``labels.npy`` of ``directory``."""
    inputs_path = directory / "inputs.npy"
    if not inputs_path.is_file():
        found = sorted(p.name for p in directory.iterdir())[:10]
        raise ValidationDataError(f"validation data {str(directory)!r}: the directory holds no inputs.npy "
                                  f"(found: {', '.join(found) or 'nothing'})")
    labels_path = directory / "labels.npy"
    labels = _loaded_npy(labels_path) if labels_path.is_file() else None
    return _loaded_npy(inputs_path), labels


def _loaded_npy(path: Path) -> np.ndarray:
    """The array in the ``.npy`` file ``path`` (no pickles)."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise ValidationDataError(f"validation data {str(path)!r} is not a readable .npy array ({error})") from error


def _npz_arrays(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """The arrays ``inputs`` and, when present, ``labels`` of the ``.npz`` file ``path`` (no pickles)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            if "inputs" not in archive.files:
                raise ValidationDataError(f"validation data {str(path)!r}: the .npz holds no array 'inputs' "
                                          f"(found: {', '.join(archive.files) or 'nothing'})")
            inputs = archive["inputs"]
            labels = archive["labels"] if "labels" in archive.files else None
    except (OSError, ValueError) as error:
        raise ValidationDataError(f"validation data {str(path)!r} is not a readable .npz archive "
                                  f"({error})") from error
    return inputs, labels
