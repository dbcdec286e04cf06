"""CNNergy: an analytical energy model of a row-stationary CNN accelerator (NeuPart, Manasi et al. 2019).

``AcceleratorSpec`` describes the hardware (Eyeriss-like defaults, 16 or 8 bits, a versioned YAML
file); ``schedule`` maps a layer onto it (the computation-scheduling parameters and exception rules);
``layer_energy`` and ``network_energy`` give the energy per image with its breakdown. Layers come
from a CSV layer table, from the four reference networks shipped with nnperf, or from any network of
the IR (``map_network``, with sparsity measured, borrowed from a table or read from a file).
"""

from nnperf.accel._dse import NEAR_OPTIMUM, DesignPoint, DesignSweep, SweepError, sweep_design
from nnperf.accel._energy import COMPONENTS, LayerEnergy, NetworkEnergy, layer_energy, network_energy
from nnperf.accel._from_ir import (
    CHAIN_OPS,
    NOT_MAPPED,
    ROW_GEOMETRY,
    AccelMappingError,
    IrMapping,
    chain_end,
    energy_layers,
    map_network,
    propagate,
    read_sparsity,
    table_sparsity,
)
from nnperf.accel._layers import (
    NETWORK_ALIASES,
    REFERENCE_NETWORKS,
    AccelLayer,
    LayerTableError,
    blocks,
    parse_table,
    read_table,
    reference_network,
    write_table,
)
from nnperf.accel._measure_sparsity import image_files, measure_sparsity, sample_images
from nnperf.accel._schedule import Schedule, ScheduleError, schedule
from nnperf.accel._spec import (
    AcceleratorSpec,
    AcceleratorSpecError,
    eyeriss_spec,
    load_spec,
    spec_from_dict,
    spec_yaml,
)

__all__ = [
    "CHAIN_OPS",
    "COMPONENTS",
    "NEAR_OPTIMUM",
    "NETWORK_ALIASES",
    "NOT_MAPPED",
    "REFERENCE_NETWORKS",
    "ROW_GEOMETRY",
    "AccelLayer",
    "AccelMappingError",
    "AcceleratorSpec",
    "AcceleratorSpecError",
    "DesignPoint",
    "DesignSweep",
    "IrMapping",
    "LayerEnergy",
    "LayerTableError",
    "NetworkEnergy",
    "Schedule",
    "ScheduleError",
    "SweepError",
    "blocks",
    "chain_end",
    "energy_layers",
    "eyeriss_spec",
    "image_files",
    "layer_energy",
    "load_spec",
    "map_network",
    "measure_sparsity",
    "network_energy",
    "parse_table",
    "propagate",
    "read_sparsity",
    "read_table",
    "reference_network",
    "sample_images",
    "schedule",
    "spec_from_dict",
    "spec_yaml",
    "sweep_design",
    "table_sparsity",
    "write_table",
]
