"""Building blocks several zoo networks share."""

from __future__ import annotations

from torch import nn


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
            act: type[nn.Module] | None = nn.ReLU, *, eps: float = 1e-5, momentum: float = 0.1) -> nn.Sequential:
    """A convolution without bias, padded to keep the size of an odd ``kernel`` at stride 1, batch normalisation
    (``eps``, ``momentum``) and ``act`` in place (None: no activation)."""
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout, eps=eps, momentum=momentum),
    ]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)
