"""The measurement store: systems, runs and measurements in one versioned SQLite file.

``Store(path)`` opens or creates the file (``default_store_path()`` names the
usual one); ``export_csv`` writes its measurements as CSV.
"""

from nnperf.store._export import csv_cell, export_csv
from nnperf.store._records import LayerRecord, NetworkRecord, RunRecord, SystemRecord
from nnperf.store._schema import SCHEMA_VERSION
from nnperf.store._store import Store, default_store_path

__all__ = [
    "SCHEMA_VERSION",
    "LayerRecord",
    "NetworkRecord",
    "RunRecord",
    "Store",
    "SystemRecord",
    "csv_cell",
    "default_store_path",
    "export_csv",
]
