"""``Value.__getitem__``: NumPy's basic indexing on Values, built from the
registry's slice, pad, reshape and concat nodes, so gradients, tangents,
loops and checkpoints work through it as through any op.

Accepted, per axis as in NumPy: an int (negative counts from the end; the
axis is dropped), a slice with any start, stop and step (negative too),
``...`` (once) and ``None`` (``numpy.newaxis``: a new axis of length 1).
Anything else (a float, a bool, a list, an array, a Value) is a TypeError,
an int out of range or too many indices an IndexError, a zero step a
ValueError, each naming what was given and what is accepted.

Cost: ``x[a:b]`` is one slice node; ``x[a:b:k]`` with k > 1 adds a pad
(when the last block runs past the end) and two reshapes around a slice
(the entries are the first column of an [n, k] view); a negative step
reverses the selected entries by halving, about 3n nodes for n entries
and n·log2(n) copies (there is no reversal op).
"""

from __future__ import annotations

import operator
import types
import typing

import numpy as np

from . import _adgraph

# One entry of an index, and an index (one entry or a tuple of them).
IndexEntry = typing.Union[typing.SupportsIndex, slice, types.EllipsisType, None]
Index = typing.Union[IndexEntry, tuple[IndexEntry, ...]]
# An index parsed: ("int", i), ("slice", s) or ("new", None) per axis.
_Parsed = list[tuple[str, typing.Any]]

ACCEPTED = ("an int, a slice (start:stop:step, any ints or None), ... (Ellipsis) "
            "or None (numpy.newaxis), or a tuple of them")


def _node(x: _adgraph.Value, op: str, **attrs: int | list[int]) -> _adgraph.Value:
    return _adgraph.add_node(x.graph, op, [x], attrs, "", [])[0]


def _shown(item: object) -> str:
    text = repr(item)
    return f"{type(item).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _as_int(item: object, what: str) -> int:
    """``item`` as an int: a Python or NumPy integer (never a bool)."""
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(f"Value index: {what} is {_shown(item)}; booleans are not "
                        f"accepted (boolean masks are not supported): give {ACCEPTED}")
    try:
        return operator.index(item)  # type: ignore[arg-type]  # (the TypeError is caught)
    except TypeError:
        raise TypeError(f"Value index: {what} is {_shown(item)}, which is not accepted: "
                        f"give {ACCEPTED}") from None


def _parse(index: object, ndim: int) -> _Parsed:
    """``index`` as a list of per-axis entries: ("int", i), ("slice", slice)
    or ("new", None), with ``...`` expanded and missing axes filled."""
    items = index if isinstance(index, tuple) else (index,)
    parsed: _Parsed = []
    ellipsis: int | None = None
    for k, item in enumerate(items):
        what = "the index" if len(items) == 1 else f"index entry {k}"
        if item is Ellipsis:
            if ellipsis is not None:
                raise IndexError("Value index: an index can only have a single ellipsis "
                                 f"('...'), got {_shown(index)}")
            ellipsis = len(parsed)
        elif item is None:
            parsed.append(("new", None))
        elif isinstance(item, slice):
            bounds = [None if b is None else _as_int(b, f"{what}'s {part}")
                      for b, part in ((item.start, "start"), (item.stop, "stop"),
                                      (item.step, "step"))]
            if bounds[2] == 0:
                raise ValueError(f"Value index: {what} has step 0; a slice step "
                                 "cannot be zero")
            parsed.append(("slice", slice(*bounds)))
        else:
            parsed.append(("int", _as_int(item, what)))
    used = sum(1 for kind, _ in parsed if kind != "new")
    if used > ndim:
        raise IndexError(f"Value index: too many indices: the Value is {ndim}-dimensional, "
                         f"but {used} were indexed ({_shown(index)})")
    fill = [("slice", slice(None))] * (ndim - used)
    if ellipsis is None:
        return parsed + fill
    return parsed[:ellipsis] + fill + parsed[ellipsis:]


def _reverse(x: _adgraph.Value, axis: int, n: int) -> _adgraph.Value:
    """x with its n entries along ``axis`` in reverse order: the reversed
    second half, then the reversed first half."""
    if n <= 1:
        return x
    half = n // 2
    back = _node(x, "slice", axis=axis, begin=half, end=n)
    front = _node(x, "slice", axis=axis, begin=0, end=half)
    return _adgraph.add_node(x.graph, "concat",
                             [_reverse(back, axis, n - half), _reverse(front, axis, half)],
                             {"axis": axis}, "", [])[0]


def _strided(x: _adgraph.Value, axis: int, first: int, step: int,
             n: int) -> _adgraph.Value:
    """Entries first, first + step, ... (n of them, step > 1) along ``axis``:
    the first column of the [n, step] view of x[first : first + n·step]."""
    extent = x.shape[axis]
    end = min(first + n * step, extent)
    x = _node(x, "slice", axis=axis, begin=first, end=end)
    if first + n * step > end:
        x = _node(x, "pad", axis=axis, before=0, after=first + n * step - end)
    shape = list(x.shape)
    x = _node(x, "reshape", shape=shape[:axis] + [n, step] + shape[axis + 1:])
    x = _node(x, "slice", axis=axis + 1, begin=0, end=1)
    return _node(x, "reshape", shape=shape[:axis] + [n] + shape[axis + 1:])


def _select(x: _adgraph.Value, axis: int, part: slice) -> _adgraph.Value:
    """x[..., part, ...] along ``axis`` for a slice ``part`` (axis kept)."""
    extent = x.shape[axis]
    start, stop, step = part.indices(extent)
    n = len(range(start, stop, step))
    if n == 0:
        return _node(x, "slice", axis=axis, begin=0, end=0)
    first = start if step > 0 else start + (n - 1) * step
    stride = abs(step)
    if stride == 1:
        if (first, n) != (0, extent):
            x = _node(x, "slice", axis=axis, begin=first, end=first + n)
    else:
        x = _strided(x, axis, first, stride, n)
    return _reverse(x, axis, n) if step < 0 else x


def getitem(x: _adgraph.Value, index: Index) -> _adgraph.Value:
    """``x[index]``: NumPy's basic indexing (see the module's docstring)."""
    shape = list(x.shape)
    entries = _parse(index, len(shape))
    out_shape, axis = [], 0
    for kind, item in entries:
        if kind == "new":
            out_shape.append(1)
            continue
        extent = x.shape[axis]
        if kind == "int":
            if not -extent <= item < extent:
                raise IndexError(f"Value index: index {item} is out of bounds for axis "
                                 f"{axis} with size {extent}")
            i = item % extent
            if extent != 1:
                x = _node(x, "slice", axis=axis, begin=i, end=i + 1)
        else:
            x = _select(x, axis, item)
            out_shape.append(x.shape[axis])
        axis += 1
    if out_shape != list(x.shape):
        x = _node(x, "reshape", shape=out_shape)
    return x
