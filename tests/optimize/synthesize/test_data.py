"""Validation data for program synthesis (digits, photographs, files) and the trained digits CNN."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from nnperf.optimize.synthesize._data import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    ValidationSet,
    digits_set,
    load_validation,
    photo_set,
)
from nnperf.optimize.synthesize._digits import (
    DigitsCNN,
    cached_digits,
    digits_split,
    predictions,
    train_digits,
)
from nnperf.optimize.synthesize._errors import SynthesisError, ValidationDataError

DIGITS_PER_CLASS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
"""How many of scikit-learn's 1797 digits show each class 0..9 (``np.bincount(load_digits().target)``)."""


@pytest.fixture(scope="module")
def digits8() -> ValidationSet:
    return digits_set(8)


@pytest.fixture(scope="module")
def digits32() -> ValidationSet:
    return digits_set(32)


def numbered(count: int) -> ValidationSet:
    """A set whose sample i is the single value i and whose label is i: parts of a split name their samples."""
    return ValidationSet("numbered", np.arange(count, dtype=np.float32)[:, None], np.arange(count))


# digits


def test_digits_count_shape_range_and_labels(digits32: ValidationSet) -> None:
    assert len(digits32) == 1797
    assert digits32.inputs.shape == (1797, 1, 32, 32)
    assert digits32.sample_shape == (1, 32, 32)
    assert digits32.inputs.dtype == np.float32 and digits32.labels is not None and digits32.labels.dtype == np.int64
    # bundled values are 0..16, divided by 16; bilinear interpolation stays within the range of its inputs
    assert digits32.inputs.min() == 0.0 and digits32.inputs.max() == 16 / 16
    assert np.bincount(digits32.labels).tolist() == DIGITS_PER_CLASS
    assert not digits32.proxy


def test_digits_at_8_pixels_are_the_bundled_images_over_16(digits8: ValidationSet) -> None:
    from sklearn.datasets import load_digits

    bundled = load_digits()
    expected = sorted(bytes(row) for row in (bundled.images.astype(np.float32) / 16).reshape(1797, 64))
    assert sorted(bytes(row) for row in digits8.inputs.reshape(1797, 64)) == expected
    assert digits8.inputs.shape == (1797, 1, 8, 8)


def test_resizing_keeps_each_images_mean(digits8: ValidationSet, digits32: ValidationSet) -> None:
    means8 = digits8.inputs.mean(axis=(1, 2, 3))
    # Scaling up 4x (align_corners=False), every source pixel's weights sum to 4 along each axis, the edge pixels'
    # included (sampling beyond the edge clamps to them): the mean is kept exactly, up to float32 rounding.
    np.testing.assert_allclose(digits32.inputs.mean(axis=(1, 2, 3)), means8, atol=1e-6)
    # At 28 = 3.5 x 8 the argument does not apply as such, but the mean is kept as closely (measured: 4.5e-8 at
    # most over the 1797 images; 6e-8 at 12, 3e-8 at 20).
    means28 = digits_set(28).inputs.mean(axis=(1, 2, 3))
    np.testing.assert_allclose(means28, means8, atol=1e-6)
    assert digits_set(28).labels.tolist() == digits8.labels.tolist()  # type: ignore[union-attr]


def test_digits_seed_shuffles_the_same_images(digits8: ValidationSet) -> None:
    again, other = digits_set(8, seed=0), digits_set(8, seed=1)
    assert np.array_equal(again.inputs, digits8.inputs) and np.array_equal(again.labels, digits8.labels)  # type: ignore[arg-type]
    assert not np.array_equal(other.labels, digits8.labels)  # type: ignore[arg-type]
    assert np.isclose(other.inputs.sum(), digits8.inputs.sum())


@pytest.mark.parametrize("size", [7, 0, 16.0])
def test_digits_size_below_8_is_refused(size: object) -> None:
    with pytest.raises(ValidationDataError, match=rf"image size must be an integer >= 8 .* got {size!r}"):
        digits_set(size)  # type: ignore[arg-type]


# ValidationSet


def test_split_sizes_determinism_and_disjointness(digits32: ValidationSet) -> None:
    first, second = digits32.split(0.7, seed=3)
    assert (len(first), len(second)) == (round(0.7 * 1797), 1797 - round(0.7 * 1797)) == (1258, 539)
    again, _ = digits32.split(0.7, seed=3)
    assert np.array_equal(again.inputs, first.inputs)
    other, _ = digits32.split(0.7, seed=4)
    assert not np.array_equal(other.inputs, first.inputs)

    part_a, part_b = numbered(10).split(0.3, seed=0)
    a, b = set(part_a.labels.tolist()), set(part_b.labels.tolist())  # type: ignore[union-attr]
    assert len(a) == 3 and len(b) == 7 and not a & b and a | b == set(range(10))
    assert np.array_equal(part_a.inputs[:, 0], part_a.labels)  # samples keep their labels


def test_split_keeps_a_sample_in_each_part() -> None:
    tiny, rest = numbered(2).split(0.01)
    assert (len(tiny), len(rest)) == (1, 1)
    most, one = numbered(5).split(0.99)
    assert (len(most), len(one)) == (4, 1)


def test_split_errors() -> None:
    with pytest.raises(ValidationDataError, match="at least 2 samples .* the set has 1"):
        numbered(1).split(0.5)
    with pytest.raises(ValidationDataError, match="strictly between 0 and 1, got 1.0"):
        numbered(4).split(1.0)


def test_take() -> None:
    first = numbered(10).take(4)
    assert first.inputs[:, 0].tolist() == [0, 1, 2, 3] and first.labels.tolist() == [0, 1, 2, 3]  # type: ignore[union-attr]
    with pytest.raises(ValidationDataError, match="can take 1 to 10 samples, asked for 11"):
        numbered(10).take(11)


def test_validation_set_converts_and_marks_a_set_without_labels_a_proxy() -> None:
    data = ValidationSet("ints", np.ones((3, 2), dtype=np.int32), [0.0, 1.0, 2.0])  # type: ignore[arg-type]
    assert data.inputs.dtype == np.float32 and data.labels.dtype == np.int64  # type: ignore[union-attr]
    assert data.labels.tolist() == [0, 1, 2] and not data.proxy  # type: ignore[union-attr]
    assert ValidationSet("unlabelled", np.ones((3, 2))).proxy


def test_validation_set_errors() -> None:
    with pytest.raises(ValidationDataError, match=r"'none': empty validation set \(inputs of shape \(0, 3\)\)"):
        ValidationSet("none", np.zeros((0, 3)))
    with pytest.raises(ValidationDataError, match="1 of 3 samples hold NaN or infinity .*sample 2"):
        ValidationSet("nan", np.array([[0.0], [1.0], [np.inf]]))
    with pytest.raises(ValidationDataError, match=r"labels must have shape \(3,\), one per input, got shape \(2,\)"):
        ValidationSet("short", np.zeros((3, 1)), np.array([0, 1]))
    with pytest.raises(ValidationDataError, match="non-integral"):
        ValidationSet("half", np.zeros((2, 1)), np.array([0.5, 1.0]))
    with pytest.raises(ValidationDataError, match="labels must be classes >= 0, found -1"):
        ValidationSet("negative", np.zeros((2, 1)), np.array([0, -1]))
    with pytest.raises(ValidationDataError, match=r"need a batch axis .* got shape \(5,\)"):
        ValidationSet("flat", np.zeros(5))


# photographs


@pytest.fixture(scope="module")
def photos() -> ValidationSet:
    return photo_set((3, 40, 48), count=24, seed=0)


def test_photo_set_shape_and_proxy(photos: ValidationSet) -> None:
    assert photos.inputs.shape == (24, 3, 40, 48) and photos.inputs.dtype == np.float32
    assert photos.proxy and photos.labels is None


def test_photo_set_is_imagenet_normalised(photos: ValidationSet) -> None:
    mean = np.array(IMAGENET_MEAN)[None, :, None, None]
    std = np.array(IMAGENET_STD)[None, :, None, None]
    pixels = photos.inputs * std + mean
    # bilinear resizing (antialiased) weighs pixels in [0, 1] with non-negative weights: no overshoot
    assert pixels.min() >= -1e-5 and pixels.max() <= 1 + 1e-5
    # real photos: neither blank nor saturated, each channel spread over much of [0, 1]
    channel_means, channel_stds = pixels.mean(axis=(0, 2, 3)), pixels.std(axis=(0, 2, 3))
    assert np.all((channel_means > 0.2) & (channel_means < 0.8)) and np.all(channel_stds > 0.15)
    normalised_means = photos.inputs.mean(axis=(0, 2, 3))
    assert np.all(np.abs(normalised_means) < 1.0) and np.all(photos.inputs.std(axis=(0, 2, 3)) > 0.5)


def test_photo_set_is_seeded(photos: ValidationSet) -> None:
    assert np.array_equal(photo_set((3, 40, 48), count=24, seed=0).inputs, photos.inputs)
    other = photo_set((3, 40, 48), count=24, seed=1).inputs
    assert not np.array_equal(other, photos.inputs)
    crops = photos.inputs.reshape(24, -1)
    assert len({bytes(row) for row in crops}) == 24  # random positions and sizes: no two crops alike


def test_photo_set_grayscale() -> None:
    gray = photo_set((1, 16, 16), count=4)
    assert gray.inputs.shape == (4, 1, 16, 16)
    # the mean of R, G, B, normalised with the mean of ImageNet's channel means and stds
    pixels = gray.inputs * np.mean(IMAGENET_STD) + np.mean(IMAGENET_MEAN)
    assert pixels.min() >= -1e-5 and pixels.max() <= 1 + 1e-5


@pytest.mark.parametrize("shape", [(2, 16, 16), (3, 16), (3, 0, 16)])
def test_photo_set_refuses_shapes_that_are_not_images(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValidationDataError, match=r"C = 3 \(RGB\) or 1 .*wants samples of shape " + re.escape(str(shape))):
        photo_set(shape)  # type: ignore[arg-type]


# load_validation


def write_directory(directory: Path, inputs: np.ndarray, labels: np.ndarray | None) -> Path:
    directory.mkdir()
    np.save(directory / "inputs.npy", inputs)
    if labels is not None:
        np.save(directory / "labels.npy", labels)
    return directory


def test_load_validation_from_a_directory(tmp_path: Path) -> None:
    inputs = np.random.default_rng(0).normal(size=(6, 2, 3, 3))
    directory = write_directory(tmp_path / "val", inputs, np.array([0, 1, 2, 0, 1, 2]))
    data = load_validation(directory, (2, 3, 3))
    assert data.name == str(directory) and len(data) == 6 and data.sample_shape == (2, 3, 3)
    assert np.array_equal(data.inputs, inputs.astype(np.float32)) and data.labels.tolist() == [0, 1, 2, 0, 1, 2]  # type: ignore[union-attr]
    assert not data.proxy
    unlabelled = load_validation(write_directory(tmp_path / "proxy", inputs, None), (2, 3, 3))
    assert unlabelled.proxy and unlabelled.labels is None


def test_load_validation_from_an_npz(tmp_path: Path) -> None:
    path = tmp_path / "val.npz"
    np.savez(path, inputs=np.ones((4, 5), dtype=np.float64), labels=np.array([3, 3, 1, 0]))
    data = load_validation(str(path), (5,))
    assert data.inputs.shape == (4, 5) and data.inputs.dtype == np.float32 and data.labels.tolist() == [3, 3, 1, 0]  # type: ignore[union-attr]
    np.savez(tmp_path / "plain.npz", inputs=np.ones((4, 5)))
    assert load_validation(tmp_path / "plain.npz", (5,)).proxy


def test_load_validation_builtins() -> None:
    digits = load_validation("digits", (1, 12, 12))
    assert digits.inputs.shape == (1797, 1, 12, 12) and not digits.proxy
    photos = load_validation("photos", (3, 8, 8), seed=2)
    assert photos.inputs.shape == (64, 3, 8, 8) and photos.proxy


def test_load_validation_errors(tmp_path: Path) -> None:
    directory = write_directory(tmp_path / "val", np.zeros((6, 2, 3, 3)), np.arange(5))
    with pytest.raises(ValidationDataError, match=rf"{re.escape(str(directory))}.*inputs have shape \(6, 2, 3, 3\), the network "
                                                  rf"wants \(N, 2, 4, 4\)"):
        load_validation(directory, (2, 4, 4))
    with pytest.raises(ValidationDataError, match=rf"{re.escape(str(directory))}.*labels must have shape \(6,\).*got shape \(5,\)"):
        load_validation(directory, (2, 3, 3))
    empty = tmp_path / "empty.npz"
    np.savez(empty, inputs=np.zeros((0, 2)))
    with pytest.raises(ValidationDataError, match="empty validation set"):
        load_validation(empty, (2,))
    nan = tmp_path / "nan.npz"
    np.savez(nan, inputs=np.array([[0.0, np.nan]]))
    with pytest.raises(ValidationDataError, match=rf"{re.escape(str(nan))}.*must be finite"):
        load_validation(nan, (2,))
    with pytest.raises(ValidationDataError, match=re.escape(f"{tmp_path / 'absent'}' does not exist")):
        load_validation(tmp_path / "absent", (2,))
    np.savez(tmp_path / "other.npz", images=np.zeros((2, 2)))
    with pytest.raises(ValidationDataError, match="holds no array 'inputs' .found: images."):
        load_validation(tmp_path / "other.npz", (2,))
    (tmp_path / "bare").mkdir()
    with pytest.raises(ValidationDataError, match="holds no inputs.npy"):
        load_validation(tmp_path / "bare", (2,))
    with pytest.raises(ValidationDataError, match=r"1-channel square images.*wants samples of shape \(3, 32, 32\)"):
        load_validation("digits", (3, 32, 32))
    with pytest.raises(ValidationDataError, match=r"'photos'.*\(C, H, W\).*wants samples of shape \(10,\)"):
        load_validation("photos", (10,))


# the trained digits CNN


@pytest.fixture
def one_thread() -> Iterator[None]:
    """torch on one thread while a test trains. This 2-core machine is shared: with another process on one core,
    torch's two threads wait on each other at every op and the small training takes ~19 s instead of ~1 s;
    on one thread it takes 1-3 s either way."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_digits_cnn_shapes() -> None:
    module = DigitsCNN(size=16, width=4).eval()
    assert module(torch.zeros(2, 1, 16, 16)).shape == (2, 10)
    convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels) for c in convs] == [(1, 4), (4, 4), (4, 8), (8, 8), (8, 16)]
    with pytest.raises(SynthesisError, match="width must be an integer >= 1, got 0"):
        DigitsCNN(width=0)


def test_small_digits_cnn_learns_the_held_out_digits(one_thread: None) -> None:
    trained = train_digits(size=16, width=8, epochs=4, seed=0)
    assert trained.validation_accuracy >= 0.90 and trained.train_accuracy >= 0.90
    assert not trained.module.training and trained.train_s > 0
    held_out = digits_split(16, seed=0)[1]
    assert len(trained.validation) == round(0.3 * 1797) == 539
    assert np.array_equal(trained.validation.inputs, held_out.inputs)
    hits = predictions(trained.module, trained.validation) == trained.validation.labels
    assert float(hits.mean()) == trained.validation_accuracy


def test_cached_digits_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_thread: None) -> None:
    import nnperf.optimize.synthesize._digits as digits_module

    path = tmp_path / "cache" / "digits.pt"
    first = cached_digits(path, size=8, width=4, epochs=1, seed=0)
    assert path.is_file()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("cached_digits trained although the cache matched")

    with monkeypatch.context() as patch:
        patch.setattr(digits_module, "train_digits", refuse)
        loaded = cached_digits(path, size=8, width=4, epochs=1, seed=0)
    inputs = torch.from_numpy(first.validation.inputs)
    with torch.no_grad():
        assert torch.equal(loaded.module(inputs), first.module(inputs))
    assert np.array_equal(loaded.validation.inputs, first.validation.inputs)
    assert (loaded.validation_accuracy, loaded.train_s) == (first.validation_accuracy, first.train_s)

    retrained = cached_digits(path, size=8, width=4, epochs=2, seed=0)
    assert retrained.epochs == 2
    assert torch.load(path, weights_only=True)["epochs"] == 2


def test_cached_digits_refuses_files_it_did_not_write(tmp_path: Path) -> None:
    foreign = tmp_path / "weights.pt"
    torch.save({"state_dict": {}}, foreign)
    with pytest.raises(SynthesisError, match="is not a digits CNN cache .*not overwriting it"):
        cached_digits(foreign, size=8, width=4, epochs=1)
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a torch file")
    with pytest.raises(SynthesisError, match="cannot be read .*delete it to train again"):
        cached_digits(broken, size=8, width=4, epochs=1)
