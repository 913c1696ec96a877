"""adgraph-run's JSON graph documents from Python (format: driver/loader.h)."""

import os
import types

from . import _adgraph


def load_json(document, file=None):
    """Builds the graph of a driver document, as ``adgraph-run`` would.

    Parameters
    ----------
    document : str or os.PathLike
        A path to the document, or (with ``file`` given, or when it starts
        with ``{``) its text.
    file : str, optional
        The name errors give the document.

    Returns
    -------
    types.SimpleNamespace
        ``graph``; ``values`` (name -> Value: nodes, ``"name:k"`` outputs,
        gradients and tangents); ``feeds`` (Value -> array); ``fetch`` (the
        names) and ``fetch_values``; ``optimize`` (None, or a namespace with
        ``objective``, ``names``, ``variables``, ``start``, ``method``,
        ``layout``). Every rank must load the same document. Errors raise
        ``adgraph.JsonError`` naming the file, node and field.
    """
    if file is None and not str(document).lstrip().startswith("{"):
        file = os.fspath(document)
        with open(file, encoding="utf-8") as f:
            text = f.read()
    else:
        text = str(document)
        file = file or "<document>"
    loaded = _adgraph._load_json(text, file)
    if loaded["optimize"] is not None:
        loaded["optimize"] = types.SimpleNamespace(**loaded["optimize"])
    return types.SimpleNamespace(**loaded)
