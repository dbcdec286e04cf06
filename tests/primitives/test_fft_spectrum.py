"""The FFT primitive's kernel spectrum, computed as one GEMM of the DFT's basis at the kernel's taps, is the
conjugate ``rfft2`` of the zero-padded, dilated kernel in the layout the per-frequency products read."""

from __future__ import annotations

import pytest
import torch

from nnperf.primitives import ConvConfig
from nnperf.primitives._algorithms import _conjugate_kernel_spectrum


def rfft2_spectrum(w: torch.Tensor, config: ConvConfig) -> torch.Tensor:
    """The spectrum as the FFT primitive computed it before: rfft2 of the dilated kernel, conjugated, permuted."""
    g, (kh, kw), (dh, dw), (hp, wp) = config.groups, config.k, config.dilation, config.padded
    wd = w.new_zeros((config.f, config.c // g, (kh - 1) * dh + 1, (kw - 1) * dw + 1))
    wd[:, :, ::dh, ::dw] = w
    spectrum = torch.fft.rfft2(wd, s=(hp, wp)).conj()
    return spectrum.reshape(g, config.f // g, config.c // g, -1).permute(3, 0, 1, 2).contiguous()


@pytest.mark.parametrize("config", [
    ConvConfig.make(1, 8, 16, 12, 3, 1, 1),
    ConvConfig.make(1, 6, 4, (9, 14), 5, 2, 2),
    ConvConfig.make(1, 8, 8, 10, 3, 1, 1, groups=4),
    ConvConfig.make(1, 4, 6, 11, 3, 1, 2, dilation=2),
    ConvConfig.make(1, 3, 5, 7, 1),
])
def test_the_kernel_spectrum_is_the_conjugate_rfft2_of_the_padded_kernel(config: ConvConfig) -> None:
    _, w, _ = config.random_operands(0)
    expected = rfft2_spectrum(w, config)
    found = _conjugate_kernel_spectrum(w, config)
    assert found.shape == expected.shape and found.dtype == expected.dtype == torch.complex64
    assert found.is_contiguous() and not found.is_conj()
    assert (found - expected).abs().max() <= 1e-5 * expected.abs().max()
    # the zero frequency is the sum of the kernel's taps
    assert found[0].real.reshape(config.f, -1).sum(1).tolist() == pytest.approx(w.sum((2, 3, 1)).tolist(),
                                                                          rel=1e-4, abs=1e-5)
