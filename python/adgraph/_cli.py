"""Command-line options from the library's field tables, for argparse.

A program's options for an options struct (``LbfgsOptions``,
``HeatInverseOptions``, ...) come from its table: ``--<name>`` (underscores
as dashes) with the table's type, default and doc. Values are checked where
they are used, by the same table, so a program gives the library's message
("noise: must be a finite number >= 0, got -1") rather than its own::

    parser = argparse.ArgumentParser()
    ag.add_table_options(parser, "HeatInverseOptions")
    args = parser.parse_args()
    problem = ag.solvers.HeatInverse(**ag.table_values(args, "HeatInverseOptions"))
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import _adgraph


def _fields(table: str, names: Iterable[str] | None) -> list[dict[str, Any]]:
    tables = _adgraph._option_fields()
    if table not in tables:
        raise KeyError(f"{table!r}: no such options table (tables: {', '.join(tables)})")
    fields = tables[table]
    if names is None:
        return list(fields)
    by_name = {f["name"]: f for f in fields}
    chosen = []
    for name in names:
        if name not in by_name:
            raise KeyError(f"{table}.{name}: no such field (fields: {', '.join(by_name)})")
        chosen.append(by_name[name])
    return chosen


def _pair(text: str) -> list[int]:
    i, sep, j = text.partition(",")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected I,J, got {text!r}")
    return [int(i), int(j)]


def _real(text: str) -> float:
    return float(text)


_TYPES: dict[str, Callable[[str], Any]] = {
    "integer": int, "real": _real, "text": str, "schedule": str,
    "integers": int, "integer pairs": _pair}


def _default(field: dict[str, Any]) -> Any:
    """The table's default as the option's value (None: not set)."""
    value = json.loads(field["default"])
    if value is None or field["type"] in ("integers", "integer pairs", "bool"):
        return value
    return _TYPES[field["type"]](str(value))


def add_table_options(parser: argparse.ArgumentParser, table: str,
                      names: Iterable[str] | None = None,
                      aliases: Mapping[str, str] | None = None) -> None:
    """Adds ``--<name>`` to `parser` for each field of options table `table`
    (``ag._adgraph._option_fields()`` lists them), or for the fields `names`:
    the table's type, default and doc (with its range or choices, and the
    default in the help). A bool is
    ``--name``/``--no-name``; a list takes several values. `aliases` gives a
    field a second spelling (``{"max_iterations": "--max-iter"}``). The
    values are not checked here: the library checks them where they are
    used, with the table's message."""
    aliases = aliases or {}
    for f in _fields(table, names):
        flags = ["--" + f["name"].replace("_", "-")]
        if f["name"] in aliases:
            flags.append(aliases[f["name"]])
        help_text = f["doc"]
        if f["choices"]:
            help_text += " (" + ", ".join(f["choices"]) + ")"
        elif f["range"]:
            help_text += " (" + f["range"] + ")"
        if _default(f) not in (None, [], ""):
            help_text += " [default: %s]" % json.loads(f["default"])
        kind = f["type"]
        extra: dict[str, Any] = {"dest": f["name"], "default": _default(f), "help": help_text}
        if kind == "bool":
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, **extra)
        elif kind in ("integers", "integer pairs"):
            parser.add_argument(*flags, type=_TYPES[kind], nargs="*", **extra)
        else:
            parser.add_argument(*flags, type=_TYPES[kind], **extra)


def table_values(args: argparse.Namespace, table: str,
                 names: Iterable[str] | None = None) -> dict[str, Any]:
    """The values of `args` for the fields of `table` (or `names`) that
    add_table_options added, as keyword arguments: those given other than
    their default (a field at its default is left to the library's)."""
    return {f["name"]: getattr(args, f["name"]) for f in _fields(table, names)
            if getattr(args, f["name"]) not in (None, _default(f))}
