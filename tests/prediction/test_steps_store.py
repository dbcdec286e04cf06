"""Step models through the store: which stored fit is a system's global model, and the 4-point characterisation
measured end to end (sweep, detection, stored fit, characterisation sweep, local lines) on a stepped fake device."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from nnperf.campaign import characterise, predict_steps, run_sweep
from nnperf.errors import NnperfError
from nnperf.ir import Layer
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.measure.sweep import SWEEP_HARNESS, UNDER_TEST, LayerConfig, SweepSpec
from nnperf.prediction.steps import (
    CHARACTERISE_ROUNDS,
    Line,
    StepModel,
    StepShape,
    fit_sweep,
    global_fits,
    global_shape,
    save_fit,
)
from nnperf.store import Store

SHAPE = StepShape("fluctuating", 8, 4)


@dataclass(frozen=True)
class SteppedCost(CostModel):
    """A fake device whose layer under test follows Eq. 3.1-3.3 in its input channels (d = 8, r = 4), with
    slopes and intercepts proportional to its filters; every other layer costs what the plain fake's does."""

    noise_sigma: float = 0.0

    def layer_cost_s(self, layer: Layer) -> float:
        if layer.name != UNDER_TEST:
            return super().layer_cost_s(layer)
        channels, filters = layer.input_shapes[0][1], layer.output_shape[1]
        scale = filters / 64
        model = StepModel.from_lines(SHAPE, (Line(2.0e-7 * scale, 2e-5 * scale), Line(1.5e-7 * scale, 1e-5 * scale)))
        return float(model.predict(np.array([channels]))[0])


def stepped_backend() -> FakeBackend:
    return FakeBackend(model=SteppedCost())


def base(filters: int = 64) -> LayerConfig:
    return LayerConfig.of("conv2d", {"channels": 10, "filters": filters, "size": 8})


def fitted_full_sweep(store: Store) -> int:
    """Sweeps channels 10..120 at 64 filters on the stepped device, fits and stores it; the system id."""
    sweep = run_sweep(stepped_backend(), store, SweepSpec(base(), "channels", tuple(range(10, 121)), 1))
    save_fit(store, fit_sweep(sweep))
    return sweep.system_id


def test_detection_through_the_store_finds_the_devices_steps(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        system_id = fitted_full_sweep(store)
        shape = global_shape(store, system_id, "conv2d", "channels")
    assert (shape.kind, shape.depth, shape.period) == ("fluctuating", 8, 4)


def test_characterise_fits_a_new_configuration_from_four_stored_points(tmp_path: Path) -> None:
    values = tuple(range(40, 101, 2))
    config = base(filters=96)  # new slopes and intercepts: 1.5x the full sweep's
    with Store(tmp_path / "s.db") as store:
        system_id = fitted_full_sweep(store)
        found = characterise(stepped_backend(), store, system_id, config, "channels", values)
        # the characterisation is a stored sweep of its points, in three rounds
        assert found.sweep.spec.rounds == CHARACTERISE_ROUNDS == 3
        assert found.sweep.spec.values == found.points
        assert len(store.layer_measurements(run_id=found.sweep.run_id)) == 3 * len(found.points)
        # a 4-point sweep fitted later does not replace the full sweep's d and r
        save_fit(store, fit_sweep(found.sweep))
        assert global_shape(store, system_id, "conv2d", "channels") == found.shape
    assert len(found.points) == 4
    assert found.shape == found.model.shape and (found.shape.depth, found.shape.period) == (8, 4)
    truth = np.array([SteppedCost().layer_cost_s(_under_test(config.with_value("channels", v))) for v in values])
    np.testing.assert_allclose(found.model.predict(np.array(values)), truth, rtol=1e-9)
    assert found.model.lines_[0].slope_s == pytest.approx(2.0e-7 * 1.5, rel=1e-9)


def _under_test(config: LayerConfig) -> Layer:
    from nnperf.measure.sweep import profiling_network

    return profiling_network(config, 1).layer(UNDER_TEST)


def test_global_fits_prefer_the_sweep_with_the_most_points(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        system_id = fitted_full_sweep(store)
        short = run_sweep(stepped_backend(), store, SweepSpec(base(32), "channels", tuple(range(40, 52)), 1,
                                                              SWEEP_HARNESS))
        save_fit(store, fit_sweep(short))  # newer, 12 points
        doc = global_fits(store, system_id, "conv2d")[("conv2d", "channels")]
        assert doc["points"] == 111 and doc["fixed"]["filters"] == 64
        longer = run_sweep(stepped_backend(), store, SweepSpec(base(32), "channels", tuple(range(10, 131)), 1))
        save_fit(store, fit_sweep(longer))
        assert global_fits(store, system_id)[("conv2d", "channels")]["points"] == 121
        assert global_fits(store, system_id, "fc") == {}


def test_characterise_refuses_an_unstepped_parameter_or_a_missing_fit(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        system = store.add_system(stepped_backend().system())
        with pytest.raises(NnperfError, match="works along channels or filters .* not size"):
            characterise(stepped_backend(), store, system.id, base(), "size", (8, 16))
        with pytest.raises(NnperfError, match="no fitted conv2d filters sweep on this system"):
            characterise(stepped_backend(), store, system.id, base(), "filters", tuple(range(8, 64)))
        assert store.runs() == []  # nothing measured


def test_predict_steps_characterises_and_verifies_along_a_range(tmp_path: Path) -> None:
    values = tuple(range(40, 101, 2))
    config = base(filters=96)
    with Store(tmp_path / "s.db") as store:
        system_id = fitted_full_sweep(store)
        one = predict_steps(store, system_id, config)
        prediction = predict_steps(store, system_id, config, "channels", values,
                                   characterise_with=stepped_backend(), verify_with=stepped_backend())
    # one configuration: the composition of the channels model, filters proportional to their work (96 / 64)
    assert one.latency_s == pytest.approx(one.composed.predict(config)) and one.values == ()
    assert one.extrapolated == ("filters=96 (covered 64-64)",)
    assert prediction.composed_s == pytest.approx([prediction.composed.predict(config.with_value("channels", v))
                                                   for v in values])
    found, verification = prediction.characterisation, prediction.verification
    assert found is not None and verification is not None
    truth = [SteppedCost().layer_cost_s(_under_test(config.with_value("channels", v))) for v in values]
    np.testing.assert_allclose(verification.measured_s, truth, rtol=1e-9)  # the noise-free device, measured
    assert verification.mape["characterised"] < 1e-9 and verification.mape["characterised_held_out"] < 1e-9
    doc = prediction.to_dict()
    assert (doc["format"], doc["version"], doc["kind"], doc["values"]) == ("nnperf-steps-prediction", 1, "conv2d",
                                                                             list(values))
    assert doc["characterisation"]["points"] == list(found.points) and len(doc["characterised_s"]) == len(values)
    assert doc["verify_run_id"] == verification.sweep.run_id != found.sweep.run_id
    assert set(doc["mape"]) == {"composed", "characterised", "characterised_held_out"}


def test_predict_steps_measures_only_along_a_range(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        system_id = fitted_full_sweep(store)
        with pytest.raises(NnperfError, match="work along a range"):
            predict_steps(store, system_id, base(), verify_with=stepped_backend())
        with pytest.raises(NnperfError, match="a parameter and its values together"):
            predict_steps(store, system_id, base(), "channels")
