"""The ``--db`` option shared by every command that reads or writes the measurement store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nnperf.api import Store


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="FILE", help="measurement store (default: $NNPERF_DB, else ./nnperf.db)")


def store_path(args: argparse.Namespace) -> Path:
    """The path of ``--db``, else of the default store."""
    from nnperf.api import default_store_path

    return Path(args.db or default_store_path())


def open_store(args: argparse.Namespace, create: bool = True) -> Store:
    """The store of ``--db`` (else the default); a command that only reads passes ``create=False``, so a
    mistyped path is an error instead of a new empty store."""
    from nnperf.api import Store

    return Store(store_path(args), create=create)
