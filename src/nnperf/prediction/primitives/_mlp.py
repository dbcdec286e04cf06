"""The fully-connected networks of Mulder et al. 3.3 (NN1, NN2): a masked loss, training with early stopping
(Table 3), and a NumPy forward pass.

Both kinds are trained as a *stack* of J networks of the same shape whose weights are (J, in, out) tensors:
NN2 is one network (J = 1) with an output per column; NN1 is one single-output network per column (J = the
number of columns). Each member's loss is its own masked mean (its gradient reaches only its own weights and
Adam is elementwise), so training the NN1 stack at once is the same as training the networks one by one,
only without a Python loop per network. Each member draws its own mini-batches from the rows it may learn
from (NN1: where its column is present; NN2: where any column is) and stops on its own (see
:func:`train_mlps`).

The trained weights are float32 NumPy arrays and prediction is a NumPy forward pass: it needs no torch, and a
model read back from JSON predicts bit for bit what it did before it was written.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.prediction.primitives._arrays import decode_array, encode_array

if TYPE_CHECKING:
    import torch


def masked_mse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor,
               dim: int | Sequence[int] | None = None) -> torch.Tensor:
    """The mean squared error over the entries where ``mask`` is true (Mulder et al. 3.3, "Loss Function").

    An entry whose mask is false contributes nothing, neither to the loss nor to the gradient, whatever its
    target holds (NaN included): its difference is replaced by 0 before squaring, so no NaN reaches the sum or
    the backward pass. With ``dim`` the mean is taken per slice over those dimensions (NN1's per-network
    losses); a slice without a present entry has loss 0.
    """
    import torch

    mask = mask.bool()
    diff = torch.where(mask, pred - target, torch.zeros((), dtype=pred.dtype))
    squared = diff * diff
    if dim is None:
        return squared.sum() / mask.sum().clamp(min=1)
    return squared.sum(dim) / mask.sum(dim).clamp(min=1)


@dataclass(frozen=True)
class TrainingSettings:
    """How a stack is trained: Adam with ``learning_rate`` and ``weight_decay`` (L2, torch's Adam), mini-batches
    of ``batch_size`` rows, early stopping after ``patience`` optimiser steps without a better monitored loss,
    at most ``max_iterations`` steps, weights and batches drawn from ``seed``, on ``threads`` torch threads
    (None: torch's current setting)."""

    hidden: tuple[int, ...]
    learning_rate: float
    weight_decay: float
    batch_size: int
    patience: int
    max_iterations: int
    seed: int
    threads: int | None = None


@dataclass(frozen=True)
class TrainingLog:
    """What training did, per member: the step whose weights were kept (``best_iteration``, 0 = the initial
    weights), that step's monitored loss (standardised log time, squared) and what was monitored
    ("validation", or "training" for a member without a validation entry); ``iterations`` steps were taken."""

    iterations: int
    best_iteration: tuple[int, ...]
    best_loss: tuple[float, ...]
    monitored: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"iterations": self.iterations, "best_iteration": list(self.best_iteration),
                "best_loss": list(self.best_loss), "monitored": list(self.monitored)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingLog:
        return cls(int(data["iterations"]), tuple(map(int, data["best_iteration"])),
                   tuple(map(float, data["best_loss"])), tuple(map(str, data["monitored"])))


@dataclass(frozen=True, eq=False)
class MlpStack:
    """J ReLU networks of one shape: ``weights[i]`` is (J, in, out) and ``biases[i]`` (J, out), float32."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    @property
    def members(self) -> int:
        return int(self.weights[0].shape[0])

    def hidden(self, x: np.ndarray) -> np.ndarray:
        """The (J, n, width) activations of the last hidden layer for inputs ``x`` (n, in), in float32 (the
        inputs themselves for a network without a hidden layer): what the last layer combines."""
        h = np.broadcast_to(np.asarray(x, dtype=np.float32)[None], (self.members, len(x), np.shape(x)[1]))
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = np.matmul(h, w) + b[:, None, :]
            np.maximum(h, 0.0, out=h)
        return h

    def forward(self, x: np.ndarray) -> np.ndarray:
        """The (J, n, out) outputs for inputs ``x`` (n, in), in float32, every member at once."""
        return np.matmul(self.hidden(x), self.weights[-1]) + self.biases[-1][:, None, :]

    def with_last_layer(self, weight: np.ndarray, bias: np.ndarray) -> MlpStack:
        """A copy whose last layer has these (J, width, out) weights and (J, out) biases (float32)."""
        return MlpStack((*self.weights[:-1], np.asarray(weight, dtype=np.float32)),
                        (*self.biases[:-1], np.asarray(bias, dtype=np.float32)))

    def to_dict(self) -> dict[str, Any]:
        return {"layers": [{"weight": encode_array(w), "bias": encode_array(b)}
                           for w, b in zip(self.weights, self.biases)]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MlpStack:
        weights = tuple(decode_array(layer["weight"]) for layer in data["layers"])
        biases = tuple(decode_array(layer["bias"]) for layer in data["layers"])
        for w, b in zip(weights, biases):
            if w.dtype != np.float32 or w.ndim != 3 or b.shape != (w.shape[0], w.shape[2]):
                raise ValueError(f"a stored layer has weights {w.shape} ({w.dtype}) and biases {b.shape}")
        if not weights or any(a.shape[2] != b.shape[1] for a, b in itertools.pairwise(weights)):
            raise ValueError("the stored layers do not chain")
        return cls(weights, biases)


class _Batches:
    """Each member's mini-batches: all its rows when they fit in one batch, otherwise an epoch of batches of a
    fresh permutation after another (the last one of an epoch may be smaller), from one seeded generator."""

    def __init__(self, rows: Sequence[np.ndarray], batch_size: int, rng: np.random.Generator) -> None:
        self.rows, self.batch_size, self.rng = rows, batch_size, rng
        self.order = list(rows)
        self.position = [len(r) if len(r) > batch_size else 0 for r in rows]
        self.fixed = all(len(r) <= batch_size for r in rows)
        self._fixed_batch = self._pad(list(rows)) if self.fixed else None

    def _pad(self, batches: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        width = max(len(b) for b in batches)
        index = np.zeros((len(batches), width), dtype=np.int64)
        valid = np.zeros((len(batches), width), dtype=bool)
        for j, b in enumerate(batches):
            index[j, :len(b)], valid[j, :len(b)] = b, True
        return index, valid

    def next(self) -> tuple[np.ndarray, np.ndarray]:
        """(index, valid): (J, width) row numbers and which of them are real (the rest is padding)."""
        if self._fixed_batch is not None:
            return self._fixed_batch
        batches = []
        for j, rows in enumerate(self.rows):
            if len(rows) <= self.batch_size:
                batches.append(rows)
                continue
            if self.position[j] >= len(rows):
                self.order[j], self.position[j] = self.rng.permutation(rows), 0
            start = self.position[j]
            batches.append(self.order[j][start:start + self.batch_size])
            self.position[j] = start + self.batch_size
        return self._pad(batches)


def _member_view(z: np.ndarray, per_column: bool) -> np.ndarray:
    """Targets (n, m) as each member sees them: (m, n, 1) for one network per column, (1, n, m) for one network."""
    return z.T[:, :, None] if per_column else z[None]


def train_mlps(x: np.ndarray, z: np.ndarray, x_val: np.ndarray, z_val: np.ndarray, per_column: bool,
               settings: TrainingSettings, initial: MlpStack | None = None) -> tuple[MlpStack, TrainingLog]:
    """Trains NN1 (``per_column``) or NN2 on standardised features ``x`` (n, d) and targets ``z`` (n, m, NaN where
    absent), early-stopping on ``x_val``/``z_val`` (Mulder et al. Table 3).

    After every optimiser step each member's masked MSE on the validation rows is computed; a member whose
    loss has not improved for ``patience`` steps stops improving (later gains are ignored), training ends when
    every member has stopped or after ``max_iterations`` steps, and each member keeps its best weights. A
    member without a present validation entry monitors its training entries instead. Weights start as
    ``torch.nn.Linear``'s (uniform within 1/sqrt(fan-in)) from a local torch generator; batches come from a
    NumPy generator; both are seeded with ``settings.seed``, so a fit is repeatable (on the same number of
    threads: a parallel sum may round differently).

    With ``initial`` (a stack of this shape: ``settings.hidden`` between ``x``'s width and the outputs) training
    starts from its weights instead (fine-tuning, Mulder et al. 4.4); ``initial`` itself is not changed. Its
    weights are then step 0's: a member whose loss never improves keeps them exactly.
    """
    import torch

    if settings.threads is None:
        return _train(x, z, x_val, z_val, per_column, settings, initial)
    before = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    try:
        return _train(x, z, x_val, z_val, per_column, settings, initial)
    finally:
        torch.set_num_threads(before)


def _initial_params(stack: MlpStack, members: int, sizes: tuple[int, ...]) -> list[torch.Tensor]:
    """Trainable copies of ``stack``'s weights and (J, 1, out) biases; a ValueError if it is not of this shape."""
    import torch

    shapes = [(members, fan_in, fan_out) for fan_in, fan_out in itertools.pairwise(sizes)]
    if [w.shape for w in stack.weights] != shapes:
        raise ValueError(f"the starting networks have layers {[list(w.shape) for w in stack.weights]}; "
                         f"training needs {[list(s) for s in shapes]}")
    params: list[torch.Tensor] = []
    for w, b in zip(stack.weights, stack.biases):
        params.append(torch.tensor(w, dtype=torch.float32).requires_grad_())
        params.append(torch.tensor(b[:, None, :], dtype=torch.float32).requires_grad_())
    return params


def _random_params(members: int, sizes: tuple[int, ...], seed: int) -> list[torch.Tensor]:
    """Trainable weights (J, in, out) and biases (J, 1, out) drawn as ``torch.nn.Linear`` draws them (uniform
    within 1/sqrt(fan-in)), from a local generator seeded with ``seed``."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    params: list[torch.Tensor] = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        bound = fan_in ** -0.5
        for shape in ((members, fan_in, fan_out), (members, 1, fan_out)):
            params.append(((torch.rand(shape, generator=gen) * 2 - 1) * bound).requires_grad_())
    return params


def _forward(params: Sequence[torch.Tensor], h: torch.Tensor) -> torch.Tensor:
    """The stack's outputs for inputs ``h``: ReLU between the layers, none after the last."""
    import torch

    for i in range(0, len(params), 2):
        h = torch.matmul(h, params[i]) + params[i + 1]
        if i < len(params) - 2:
            h = torch.relu(h)
    return h


@dataclass(frozen=True)
class _Targets:
    """Standardised features ``x`` (n, d) and each member's targets ``z`` with their ``mask`` as tensors."""

    x: torch.Tensor
    z: torch.Tensor
    mask: torch.Tensor

    @classmethod
    def of(cls, x: np.ndarray, z: np.ndarray, per_column: bool) -> _Targets:
        import torch

        target = _member_view(z, per_column)
        return cls(torch.from_numpy(np.asarray(x, dtype=np.float32)),
                   torch.from_numpy(np.nan_to_num(target).astype(np.float32)), torch.from_numpy(~np.isnan(target)))

    def loss(self, params: Sequence[torch.Tensor]) -> torch.Tensor:
        """Each member's masked MSE on every row."""
        return masked_mse(_forward(params, self.x[None]), self.z, self.mask, dim=(1, 2))


@dataclass(frozen=True)
class _Monitor:
    """What early stopping watches: each member's loss on the validation rows, or on its training rows for a
    member without a present validation entry (``on_training``)."""

    validation: _Targets
    training: _Targets
    on_training: np.ndarray

    def loss(self, params: Sequence[torch.Tensor]) -> torch.Tensor:
        import torch

        with torch.no_grad():
            loss = self.validation.loss(params)
            if self.on_training.any():
                loss = torch.where(torch.from_numpy(self.on_training), self.training.loss(params), loss)
        return loss


@dataclass(frozen=True)
class _Best:
    """The weights each member keeps, the step they come from and their monitored loss; ``iterations`` steps
    were taken."""

    params: list[torch.Tensor]
    iteration: torch.Tensor
    loss: torch.Tensor
    iterations: int


def _optimise(params: list[torch.Tensor], train: _Targets, rows: Sequence[np.ndarray], monitor: _Monitor,
              settings: TrainingSettings) -> _Best:
    """Adam on mini-batches of each member's ``rows`` until every member stopped improving for ``patience``
    steps or ``max_iterations`` steps were taken; each member's best weights are kept."""
    import torch

    members = len(rows)
    optimiser = torch.optim.Adam(params, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    batches = _Batches(rows, settings.batch_size, np.random.default_rng(settings.seed))
    member = torch.arange(members)[:, None]
    best = [p.detach().clone() for p in params]
    best_loss = monitor.loss(params)
    best_iteration = torch.zeros(members, dtype=torch.long)
    active = torch.ones(members, dtype=torch.bool)
    iteration = 0
    while iteration < settings.max_iterations and bool(active.any()):
        iteration += 1
        index, valid = (torch.from_numpy(a) for a in batches.next())
        mask = train.mask[member, index] & valid[:, :, None]
        loss = masked_mse(_forward(params, train.x[index]), train.z[member, index], mask, dim=(1, 2)).sum()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        current = monitor.loss(params)
        improved = active & (current < best_loss)
        if bool(improved.any()):
            best_loss = torch.where(improved, current, best_loss)
            best_iteration = torch.where(improved, iteration, best_iteration)
            for kept, p in zip(best, params):
                kept[improved] = p.detach()[improved]
        active &= (iteration - best_iteration) < settings.patience
    return _Best(best, best_iteration, best_loss, iteration)


def _train(x: np.ndarray, z: np.ndarray, x_val: np.ndarray, z_val: np.ndarray, per_column: bool,
           settings: TrainingSettings, initial: MlpStack | None = None) -> tuple[MlpStack, TrainingLog]:
    members, outputs = (z.shape[1], 1) if per_column else (1, z.shape[1])
    present = ~np.isnan(_member_view(z, per_column))
    rows = [np.flatnonzero(present[j].any(axis=1)) for j in range(members)]
    sizes = (x.shape[1], *settings.hidden, outputs)
    params = (_initial_params(initial, members, sizes) if initial is not None
              else _random_params(members, sizes, settings.seed))
    train = _Targets.of(x, z, per_column)
    validation = _Targets.of(x_val, z_val, per_column)
    on_training = ~validation.mask.numpy().any(axis=(1, 2))
    best = _optimise(params, train, rows, _Monitor(validation, train, on_training), settings)
    stack = MlpStack(tuple(best.params[i].numpy().copy() for i in range(0, len(best.params), 2)),
                     tuple(best.params[i][:, 0, :].numpy().copy() for i in range(1, len(best.params), 2)))
    log = TrainingLog(best.iterations, tuple(map(int, best.iteration)), tuple(map(float, best.loss)),
                      tuple("training" if t else "validation" for t in on_training))
    return stack, log
