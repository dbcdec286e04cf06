"""Client/cloud partitioning of a network (NeuPart, seed ``neupart-manasi``: Sec. VI-VIII).

Feed it split points (cumulative client energy and time, cloud time, bits sent) from any source and a
:class:`Channel`; it returns the energy cost of every split (Eq. 1), the delay (Eq. 26) and the optimum.
"""

from nnperf.optimize.partition._points import (
    CLOUD_TOPS,
    SEND_MODES,
    InputCoding,
    cloud_macs_per_s,
    network_points,
    table_points,
)
from nnperf.optimize.partition._split import PartitionResult, RuntimePartitioner, SplitPoint, pareto_front, partition
from nnperf.optimize.partition._sweep import (
    NEUPART_INPUT_SPARSITIES,
    ChannelSweep,
    QuartileRow,
    quartile_table,
    sweep_channels,
)
from nnperf.optimize.partition._transmit import (
    RLC_FACTOR_8BIT,
    RLC_FACTOR_16BIT,
    RLC_WORD_BITS,
    Channel,
    PartitionInputError,
    jpeg_bits,
    parse_bitrate,
    parse_power,
    rlc_bits,
)

__all__ = [
    "CLOUD_TOPS",
    "NEUPART_INPUT_SPARSITIES",
    "RLC_FACTOR_8BIT",
    "RLC_FACTOR_16BIT",
    "RLC_WORD_BITS",
    "SEND_MODES",
    "Channel",
    "ChannelSweep",
    "InputCoding",
    "PartitionInputError",
    "PartitionResult",
    "QuartileRow",
    "RuntimePartitioner",
    "SplitPoint",
    "cloud_macs_per_s",
    "jpeg_bits",
    "network_points",
    "pareto_front",
    "parse_bitrate",
    "parse_power",
    "partition",
    "quartile_table",
    "rlc_bits",
    "sweep_channels",
    "table_points",
]
