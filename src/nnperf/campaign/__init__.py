"""Campaigns: everything that measures into the store, through one runner, with one owner of the run bookkeeping.

The layers are ir < zoo < measure < store < prediction < campaign < ... :
``nnperf.measure`` measures and holds the measured data (timings, specs, the
profiling network, sweep specs and results, the surround rule) and stores
nothing; ``nnperf.store`` keeps rows and knows no activity; ``nnperf.prediction``
fits and predicts and measures nothing; this package is where they meet, so
everything that measures *into* the store lives here:

- :func:`open_campaign` / :class:`Campaign`: the one mechanism that reuses a
  finished run, resumes an interrupted one, says what is already stored and
  finishes the run 'done' or 'failed' (``_campaign.py``);
- measuring items (:class:`LayerItem`, :class:`WholeItem`, :class:`SentinelItem`, :class:`ProfilerItem`,
  :class:`SweepPointItem`, :class:`RooflineItem`, :class:`ReferenceItem`, and :class:`PrimitiveItem`): a
  campaign's work as pure functions of (system, item), and :class:`ItemRunner`, the one measurement path, which
  runs them in this process (:class:`LocalRunner`, :class:`PrimitiveRunner`) or on a fleet (``nnperf.fleet``);
  :func:`runner_for` turns a campaign's :data:`Measurer` into one (``_items.py``);
- the measuring functions that both runners' items call: the drift :data:`SENTINEL` and
  :func:`measure_sentinel`, :func:`measure_isolated_layer`, :func:`measure_whole_with_sentinel`
  (``_measuring.py``);
- :func:`profile_network` with :class:`ProfileConfig`, :class:`ProfileReport`, :func:`network_hash`,
  :func:`profiler_chunk` and :func:`profiler_chunks` (``_profile.py``); :func:`measure_networks`, several
  networks reusing finished campaigns (``_networks.py``);
- :func:`calibrate`: the calibration networks, the roofline peaks (:func:`measure_roofline`, ``_roofline.py``),
  the machine-speed reference and the sampled layers (:func:`sample_layers`, ``_sampling.py``) measured, then
  fitted by ``nnperf.prediction`` and stored (``_calibration.py``);
- :func:`run_sweep` and :func:`measure_rounds` (``_sweep.py``); :func:`find_surround`, :func:`surround_width`,
  :func:`recorded_surround` (``_surround.py``); :func:`characterise` and :func:`predict_steps`, the step models'
  measurements (``_steps.py``);
- :func:`profile_primitives` and :func:`load_primitive_dataset`: the primitive-time dataset of Mulder et al.,
  one run per convolution configuration (``_primitives.py``; :func:`profile_transforms` adds activations whose
  layout transformations alone are timed; :func:`profile_speed`, the machine-speed reference timed in every
  configuration's rounds, which the dataset is levelled with; :func:`profiling_durations`, how long each
  configuration took); :func:`measure_ratio_rounds` and :class:`RatioStopping`, the rounds each workload of a
  configuration leaves once its ratio to the reference is known well enough (``_ratio_rounds.py``);
  :func:`export_primitive_dataset` and
  :func:`import_primitive_dataset`: that dataset as one portable file, and back into a store
  (``_dataset_file.py``); :func:`profile_layer_layouts` and
  :func:`load_layer_layouts`: the other layers' times in each layout (``_layer_layouts.py``);
- :func:`time_with_reference` and :func:`store_referenced`: a whole network timed beside the machine-speed
  reference under a comparison protocol, and stored with the reference's reading (``_referenced.py``);
- :func:`attach_trace`, which writes a power trace's energies into a stored
  run (``_trace.py``).
"""

from nnperf.campaign._calibration import (
    CALIBRATION_HARNESS,
    FUSION_PROFILER_RUNS,
    ReferenceItem,
    RooflineItem,
    block_calibration_networks,
    calibrate,
    calibration_networks,
    networks_to_calibrate,
    predictor_options,
    sentinel_reference_s,
)
from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.campaign._dataset_file import (
    DATASET_FILE_FORMAT,
    DatasetFileError,
    DatasetImport,
    export_primitive_dataset,
    import_primitive_dataset,
)
from nnperf.campaign._items import (
    Item,
    ItemProgress,
    ItemRunner,
    LayerItem,
    LocalRunner,
    Measurer,
    ProfilerItem,
    SentinelItem,
    SweepPointItem,
    WholeItem,
    runner_for,
)
from nnperf.campaign._layer_layouts import (
    LAYER_CAMPAIGN,
    LayerProfileReport,
    LayerTimes,
    layout_layers,
    load_layer_layouts,
    profile_layer_layouts,
)
from nnperf.campaign._measuring import (
    SENTINEL,
    measure_isolated_layer,
    measure_sentinel,
    measure_whole_with_sentinel,
)
from nnperf.campaign._networks import RunsProgress, measure_networks
from nnperf.campaign._primitives import (
    DATASET_HARNESS,
    DATASET_REFERENCE,
    PRIMITIVE_BACKEND,
    PRIMITIVE_CAMPAIGN,
    SLOW_FACTOR,
    SPEED_REFERENCE,
    PrimitiveItem,
    PrimitiveOutcome,
    PrimitiveProfileReport,
    PrimitiveRunner,
    ProfileSpeed,
    load_primitive_dataset,
    primitive_system,
    primitive_systems,
    profile_primitives,
    profile_speed,
    profile_transforms,
    profiling_durations,
)
from nnperf.campaign._profile import (
    UNATTRIBUTED_PREFIX,
    ProfileConfig,
    ProfileReport,
    network_hash,
    profile_network,
    profiler_chunk,
    profiler_chunks,
)
from nnperf.campaign._ratio_rounds import (
    DATASET_STOPPING,
    RatioRounds,
    RatioStopping,
    measure_ratio_rounds,
    ratio_standard_error,
)
from nnperf.campaign._referenced import ReferencedTiming, store_referenced, time_with_reference
from nnperf.campaign._roofline import BANDWIDTH_PROBES, COMPUTE_PROBES, PROBE_HARNESS, measure_roofline
from nnperf.campaign._sampling import SAMPLE_CAMPAIGN, SENTINEL_EVERY, SENTINEL_PREFIX, sample_layers
from nnperf.campaign._steps import characterise, predict_steps
from nnperf.campaign._surround import find_surround, recorded_surround, surround_width
from nnperf.campaign._sweep import measure_rounds, run_sweep
from nnperf.campaign._trace import attach_trace

__all__ = [
    "BANDWIDTH_PROBES",
    "CALIBRATION_HARNESS",
    "COMPUTE_PROBES",
    "DATASET_FILE_FORMAT",
    "DATASET_HARNESS",
    "DATASET_REFERENCE",
    "DATASET_STOPPING",
    "FUSION_PROFILER_RUNS",
    "LAYER_CAMPAIGN",
    "PRIMITIVE_BACKEND",
    "PRIMITIVE_CAMPAIGN",
    "PROBE_HARNESS",
    "SAMPLE_CAMPAIGN",
    "SENTINEL",
    "SENTINEL_EVERY",
    "SENTINEL_PREFIX",
    "SLOW_FACTOR",
    "SPEED_REFERENCE",
    "UNATTRIBUTED_PREFIX",
    "Campaign",
    "DatasetFileError",
    "DatasetImport",
    "Item",
    "ItemProgress",
    "ItemRunner",
    "LayerItem",
    "LayerProfileReport",
    "LayerTimes",
    "LocalRunner",
    "Measurer",
    "PrimitiveItem",
    "PrimitiveOutcome",
    "PrimitiveProfileReport",
    "PrimitiveRunner",
    "ProfileConfig",
    "ProfileReport",
    "ProfileSpeed",
    "ProfilerItem",
    "Progress",
    "RatioRounds",
    "RatioStopping",
    "ReferenceItem",
    "ReferencedTiming",
    "RooflineItem",
    "RunsProgress",
    "SentinelItem",
    "SweepPointItem",
    "WholeItem",
    "attach_trace",
    "block_calibration_networks",
    "calibrate",
    "calibration_networks",
    "characterise",
    "export_primitive_dataset",
    "find_surround",
    "import_primitive_dataset",
    "layout_layers",
    "load_layer_layouts",
    "load_primitive_dataset",
    "measure_isolated_layer",
    "measure_networks",
    "measure_ratio_rounds",
    "measure_roofline",
    "measure_rounds",
    "measure_sentinel",
    "measure_whole_with_sentinel",
    "network_hash",
    "networks_to_calibrate",
    "no_progress",
    "open_campaign",
    "predict_steps",
    "predictor_options",
    "primitive_system",
    "primitive_systems",
    "profile_layer_layouts",
    "profile_network",
    "profile_primitives",
    "profile_speed",
    "profile_transforms",
    "profiler_chunk",
    "profiler_chunks",
    "profiling_durations",
    "ratio_standard_error",
    "recorded_surround",
    "run_sweep",
    "runner_for",
    "sample_layers",
    "sentinel_reference_s",
    "store_referenced",
    "surround_width",
    "time_with_reference",
]
