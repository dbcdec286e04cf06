"""A YOLOv8n-like detector (Ultralytics YOLOv8, 2023), 640x640, COCO's 80 classes.

The layout of Ultralytics' ``yolov8.yaml`` at scale ``n`` (depth 0.33, width
0.25), written here in plain PyTorch with random weights:

- backbone: Conv-BN-SiLU blocks (3x3/2 downsampling to 16, 32, 64, 128, 256
  channels) with C2f blocks of 1, 2, 2, 1 bottlenecks between them, then SPPF
  (a 1x1 conv, three chained 5x5/1 max pools, concat of the four, 1x1 conv);
- PAN neck: nearest 2x upsampling + concat + C2f top-down to stride 8, then
  3x3/2 convs + concat + C2f bottom-up to strides 16 and 32 (C2f without the
  residual add in the neck);
- head (``Detect``): per scale two branches of two 3x3 Conv-BN-SiLU and a 1x1
  conv with bias, 64 channels of box regression (4 sides x 16 DFL bins) and 80
  class scores.

A C2f block (Cross Stage Partial with 2 convs, "faster") splits the output of
its first 1x1 conv into two halves with ``chunk`` (SLICE layers in the IR),
feeds the second half through the bottlenecks, concatenates both halves and
every bottleneck's output, and mixes them with a 1x1 conv.

The network stops at the raw head outputs: each scale's 144 channels
(64 box + 80 class) flattened and concatenated to 1 x 144 x 8400 (80x80 +
40x40 + 20x20 anchors), as Ultralytics' export does before decoding. The DFL
decode (softmax over 16 bins and its fixed 1x1 conv of 16 weights), the
anchor/stride box decoding and NMS are post-processing and are not included.

3,157,184 parameters (Ultralytics' unfused 3,157,200 less the DFL's 16 fixed
weights); about 4.37 GMACs (Ultralytics: 8.7 GFLOPs fused = 2 x MACs).
"""

from __future__ import annotations

import torch
from torch import nn

_BN_EPS = 1e-3  # Ultralytics' BatchNorm2d(eps=0.001, momentum=0.03)


class Conv(nn.Sequential):
    """Conv2d (no bias, 'same' padding) + BN + SiLU.

    SiLU is not in place, as in Ultralytics: an in-place one makes torch.export replay the C2f chunk's views
    as a second Split before the concat, and the ONNX import would then have 16 more SLICE layers.
    """

    def __init__(self, cin: int, cout: int, kernel: int = 1, stride: int = 1) -> None:
        super().__init__(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False),
                         nn.BatchNorm2d(cout, eps=_BN_EPS, momentum=0.03), nn.SiLU())


class Bottleneck(nn.Module):
    """Two 3x3 Convs, with the input added back when ``shortcut``."""

    def __init__(self, channels: int, shortcut: bool) -> None:
        super().__init__()
        self.cv1 = Conv(channels, channels, 3)
        self.cv2 = Conv(channels, channels, 3)
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.shortcut else y


class C2f(nn.Module):
    """1x1 Conv to 2c, split into halves, ``n`` bottlenecks on the second, concat of all, 1x1 Conv."""

    def __init__(self, cin: int, cout: int, n: int, shortcut: bool) -> None:
        super().__init__()
        self.c = cout // 2
        self.cv1 = Conv(cin, 2 * self.c)
        self.cv2 = Conv((2 + n) * self.c, cout)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first, second = self.cv1(x).chunk(2, dim=1)  # unpacked, not list(): torch.fx cannot iterate a proxy
        y = [first, second]
        for block in self.m:
            y.append(block(y[-1]))
        return self.cv2(torch.cat(y, dim=1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: 1x1 Conv to c/2, three chained 5x5/1 max pools, concat of four, 1x1 Conv."""

    def __init__(self, cin: int, cout: int, kernel: int = 5) -> None:
        super().__init__()
        hidden = cin // 2
        self.cv1 = Conv(cin, hidden)
        self.cv2 = Conv(4 * hidden, cout)
        self.m = nn.MaxPool2d(kernel, stride=1, padding=kernel // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, dim=1))


class Detect(nn.Module):
    """Per scale a box branch (to 4 x ``reg_max`` channels) and a class branch (to ``num_classes``)."""

    def __init__(self, num_classes: int, channels: tuple[int, ...], reg_max: int = 16) -> None:
        super().__init__()
        box = max(16, channels[0] // 4, 4 * reg_max)  # Ultralytics' c2
        cls = max(channels[0], min(num_classes, 100))  # Ultralytics' c3
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(c, box, 3), Conv(box, box, 3), nn.Conv2d(box, 4 * reg_max, 1))
                                 for c in channels)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(c, cls, 3), Conv(cls, cls, 3), nn.Conv2d(cls, num_classes, 1))
                                 for c in channels)
        self.outputs = 4 * reg_max + num_classes

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        flat = [torch.cat((box(x), cls(x)), dim=1).flatten(2) for x, box, cls in zip(features, self.cv2, self.cv3)]
        return torch.cat(flat, dim=2)


class YOLOv8(nn.Module):
    """YOLOv8 backbone, PAN neck and raw detection head; ``widths`` are the scaled channels 16..256 of ``n``."""

    def __init__(self, num_classes: int = 80, widths: tuple[int, ...] = (16, 32, 64, 128, 256),
                 depths: tuple[int, ...] = (1, 2, 2, 1)) -> None:
        super().__init__()
        w0, w1, w2, w3, w4 = widths
        self.stem = nn.Sequential(Conv(3, w0, 3, 2), Conv(w0, w1, 3, 2), C2f(w1, w1, depths[0], True))
        self.p3 = nn.Sequential(Conv(w1, w2, 3, 2), C2f(w2, w2, depths[1], True))
        self.p4 = nn.Sequential(Conv(w2, w3, 3, 2), C2f(w3, w3, depths[2], True))
        self.p5 = nn.Sequential(Conv(w3, w4, 3, 2), C2f(w4, w4, depths[3], True), SPPF(w4, w4))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.top_down4 = C2f(w4 + w3, w3, 1, False)
        self.top_down3 = C2f(w3 + w2, w2, 1, False)
        self.down3 = Conv(w2, w2, 3, 2)
        self.bottom_up4 = C2f(w2 + w3, w3, 1, False)
        self.down4 = Conv(w3, w3, 3, 2)
        self.bottom_up5 = C2f(w3 + w4, w4, 1, False)
        self.detect = Detect(num_classes, (w2, w3, w4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        p5 = self.p5(p4)
        t4 = self.top_down4(torch.cat((self.up(p5), p4), dim=1))
        out3 = self.top_down3(torch.cat((self.up(t4), p3), dim=1))
        out4 = self.bottom_up4(torch.cat((self.down3(out3), t4), dim=1))
        out5 = self.bottom_up5(torch.cat((self.down4(out4), p5), dim=1))
        return self.detect([out3, out4, out5])


def yolov8n() -> nn.Module:
    """YOLOv8n (width 0.25, depth 0.33), 80 classes, random weights; output 1 x 144 x 8400 raw head maps."""
    return YOLOv8()
