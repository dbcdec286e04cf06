"""The ``--db`` option shared by every command that reads or writes the measurement store."""

from __future__ import annotations

import argparse

from nnperf.store import Store, default_store_path


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="FILE", help="measurement store (default: $NNPERF_DB, else ./nnperf.db)")


def open_store(args: argparse.Namespace, create: bool = True) -> Store:
    """The store of ``--db`` (else the default); a command that only reads passes ``create=False``, so a
    mistyped path is an error instead of a new empty store."""
    return Store(args.db or default_store_path(), create=create)
