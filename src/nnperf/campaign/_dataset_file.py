"""A profiled primitive dataset as one portable file, and back into a store.

A dataset lives in its store, next to every round it was measured in. To move it to another machine, publish it
beside a benchmark's figures or keep it when a store is lost, :func:`export_primitive_dataset` writes what the
cost models learn from: the system it was profiled on and, per configuration and activation, each primitive's and
transformation's time as :func:`~nnperf.campaign.load_primitive_dataset` reads it (the paired time where the
rounds were interleaved). The file is JSON, gzip-compressed when its name ends in ``.gz``::

    {"format": "nnperf-primitive-dataset", "version": 1,
     "system": {"key": ..., "backend": "primitives", "device": "cpu", "device_name": ..., "options": {...},
                "host": {...}},
     "conv": [{"config": {"batch": 1, "c": 64, ...}, "times_s": {"torch-conv2d": 0.0012, ...}}, ...],
     "layout": [{"batch": 1, "c": 64, "im": [56, 56], "times_s": {"chw->hwc": 0.0001, ...}}, ...]}

:func:`import_primitive_dataset` stores such a file under its own system (the same key as where it was profiled),
one run per configuration as a profile would, each time as a single sample: a time the store holds already for its
configuration is kept and not imported, so importing twice adds nothing. Each activation's transformations go with
the first configuration that reads it, or, for an activation no configuration reads (one profiled for its
transformations alone), with its carrier configuration (``ConvConfig.carrier``), as the profile stored them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnperf.campaign._campaign import open_campaign
from nnperf.campaign._primitives import (
    PRIMITIVE_BACKEND,
    PRIMITIVE_CAMPAIGN,
    _stored_names,
    load_primitive_dataset,
)
from nnperf.errors import NnperfError
from nnperf.measure import LayerMeasurement, Method, SystemSpec, Timing, fixed_timing
from nnperf.primitives import (
    ConvConfig,
    PrimitiveDataset,
    all_primitives,
    all_transforms,
    config_from_dict,
    config_key,
    config_label,
    get_primitive,
    parse_layout,
)
from nnperf.store import Store, SystemRecord

DATASET_FILE_FORMAT = "nnperf-primitive-dataset"
DATASET_FILE_VERSION = 1


class DatasetFileError(NnperfError):
    """A dataset file that cannot be read: not JSON, another format or version, or a malformed entry."""


@dataclass(frozen=True)
class DatasetImport:
    """What :func:`import_primitive_dataset` stored: the system, how many configurations got new times (and how many
    activations profiled for their transformations alone), how many times were new to the store, and how many it
    held already (``skipped``)."""

    system: SystemRecord
    configurations: int
    times: int
    skipped: int
    activations: int = 0


def _opener(path: Path) -> Any:
    return gzip.open if path.name.endswith(".gz") else open


def export_primitive_dataset(store: Store, system_id: int, path: Path) -> PrimitiveDataset:
    """Writes the primitive dataset of stored system ``system_id`` to ``path`` (see the module docstring) and
    returns it."""
    record = store.system(system_id)
    dataset = load_primitive_dataset(store, record.id)
    document = {"format": DATASET_FILE_FORMAT, "version": DATASET_FILE_VERSION,
                "system": {"key": record.key, "backend": record.backend, "device": record.device,
                           "device_name": record.device_name, "options": record.options, "host": record.host},
                "conv": [{"config": s.config.to_dict(), "times_s": dict(s.times_s)} for s in dataset.conv],
                "layout": [{"batch": t.batch, "c": t.c, "im": list(t.im), "times_s": dict(t.times_s)}
                           for t in dataset.layout]}
    path.parent.mkdir(parents=True, exist_ok=True)
    with _opener(path)(path, "wt", encoding="utf-8") as out:
        json.dump(document, out)
    return dataset


def read_dataset_file(path: Path) -> dict[str, Any]:
    """The document of a dataset file, checked for its format and version."""
    try:
        with _opener(path)(path, "rt", encoding="utf-8") as f:
            document = json.load(f)
    except FileNotFoundError:
        raise DatasetFileError(f"{path}: no such dataset file") from None
    except (OSError, ValueError) as exc:
        raise DatasetFileError(f"{path}: not a JSON dataset file ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != DATASET_FILE_FORMAT:
        raise DatasetFileError(f"{path}: not an {DATASET_FILE_FORMAT} file (its format is "
                               f"{document.get('format') if isinstance(document, dict) else None!r})")
    if document.get("version") != DATASET_FILE_VERSION:
        raise DatasetFileError(f"{path}: version {document.get('version')!r} of {DATASET_FILE_FORMAT}; this nnperf "
                               f"reads version {DATASET_FILE_VERSION}")
    system = document.get("system")
    if not isinstance(system, dict) or system.get("backend") != PRIMITIVE_BACKEND:
        raise DatasetFileError(f"{path}: its system is not a primitive system (backend {PRIMITIVE_BACKEND!r})")
    return document


def _timing(seconds: Any, where: str) -> Timing:
    if not isinstance(seconds, (int, float)) or not seconds > 0:
        raise DatasetFileError(f"{where}: a time must be a positive number of seconds, got {seconds!r}")
    return fixed_timing((seconds,))


def _group(name: str) -> str:
    """The group a primitive's or transformation's time is stored under: its family, or layout."""
    return "layout" if "->" in name else get_primitive(name).family.value


def _known(name: str, where: str, known: frozenset[str]) -> str:
    """``name`` if it is one of the ``known`` primitives, or a transformation between two layouts nnperf knows:
    the blocked layout's width follows the profiling machine's vector width (chw16c with AVX-512, chw8c with
    AVX2), so a dataset from another machine names transformations this one does not make."""
    source, arrow, target = name.partition("->")
    if name in known:
        return name
    if arrow:
        try:
            parse_layout(source), parse_layout(target)
            return name
        except NnperfError:
            pass
    raise DatasetFileError(f"{where}: unknown primitive or transformation {name!r}")


def _entries(document: Mapping[str, Any], path: Path) -> list[tuple[ConvConfig, dict[str, Timing]]]:
    """Each configuration of the document with its measurements (its activation's transformations added to the
    first configuration that reads it)."""
    known = frozenset([p.name for p in all_primitives()] + [t.name for t in all_transforms()])
    entries: list[tuple[ConvConfig, dict[str, Timing]]] = []
    first_reader: dict[tuple[int, int, tuple[int, int]], dict[str, Timing]] = {}
    for i, entry in enumerate(document.get("conv", [])):
        where = f"{path}: conv[{i}]"
        try:
            config = config_from_dict(entry["config"])
        except (KeyError, TypeError, ValueError, NnperfError) as exc:
            raise DatasetFileError(f"{where}: not a convolution configuration ({exc})") from None
        timings = {_known(name, where, known): _timing(t, f"{where} {name}") for name, t in _times(entry, where)}
        entries.append((config, timings))
        first_reader.setdefault((config.batch, config.c, config.im), timings)
    for i, entry in enumerate(document.get("layout", [])):
        where = f"{path}: layout[{i}]"
        times = _times(entry, where)
        shape = (entry.get("batch"), entry.get("c"), tuple(entry.get("im", ())))
        if shape not in first_reader:  # an activation profiled for its transformations alone
            try:
                carrier = ConvConfig.carrier(*shape)  # type: ignore[arg-type]
            except (TypeError, ValueError, IndexError, NnperfError) as exc:
                raise DatasetFileError(f"{where}: not an activation (batch, c, im): {shape} ({exc})") from None
            entries.append((carrier, {}))
            first_reader[shape] = entries[-1][1]
        first_reader[shape].update({_known(name, where, known): _timing(t, f"{where} {name}") for name, t in times})
    return entries


def _times(entry: Any, where: str) -> list[tuple[str, Any]]:
    """The (name, seconds) pairs of an entry's ``times_s``."""
    times = entry.get("times_s", {}) if isinstance(entry, dict) else None
    if not isinstance(times, dict):
        raise DatasetFileError(f"{where}: an entry needs a times_s object of name: seconds")
    return list(times.items())


def _system(document: Mapping[str, Any], path: Path) -> SystemSpec:
    """The system a dataset file names, checked against the key it was stored under."""
    system = document["system"]
    try:
        spec = SystemRecord(0, "", system["backend"], system["device"], system["device_name"], dict(system["options"]),
                            dict(system["host"]), 0.0).spec()
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetFileError(f"{path}: a malformed system ({exc})") from None
    if system.get("key") not in (spec.key, spec.legacy_key):
        raise DatasetFileError(f"{path}: the system's description gives key {spec.key}, not the {system.get('key')!r} "
                               "it was profiled under (was it edited?)")
    return spec


def import_primitive_dataset(store: Store, path: Path) -> DatasetImport:
    """Stores the dataset file ``path`` in ``store`` under the system it names (see the module docstring)."""
    document = read_dataset_file(path)
    entries = _entries(document, path)
    spec = _system(document, path)
    record = store.add_system(spec)
    have = _stored_names(store, record)
    configurations = activations = times = skipped = 0
    for config, timings in entries:
        key = config_key(config)
        new = [LayerMeasurement(name, "transform" if "->" in name else "primitive", Method.ISOLATED, timing,
                                _group(name)) for name, timing in timings.items() if name not in have.get(key, ())]
        skipped += len(timings) - len(new)
        if not new:
            continue
        with open_campaign(store, spec, PRIMITIVE_CAMPAIGN + key, config_label(config), key, Method.ISOLATED.value,
                           {**config.to_dict(), "imported_from": path.name}) as campaign:
            campaign.add_layers(new)
        if any("->" not in name for name in timings):
            configurations += 1
        else:
            activations += 1
        times += len(new)
    return DatasetImport(record, configurations, times, skipped, activations)
