"""The ``--db`` option shared by every command that reads or writes the measurement store."""

from __future__ import annotations

import argparse

from nnperf.store import Store, default_store_path


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="FILE", help="measurement store (default: $NNPERF_DB, else ./nnperf.db)")


def open_store(args: argparse.Namespace) -> Store:
    return Store(args.db or default_store_path())
