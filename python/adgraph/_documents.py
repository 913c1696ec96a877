"""adgraph-run's JSON graph documents from Python (format: driver/loader.h)."""

from __future__ import annotations

import os
import types

from . import _adgraph
from ._errors import JsonError


def _decoded(data: bytes, file: str) -> str:
    """``data`` (bytes) as text: UTF-8, an optional byte order mark dropped."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise JsonError(f"{file}: load_json: the document is not UTF-8 text (byte "
                        f"0x{data[e.start]:02x} at offset {e.start}: {e.reason})") from None


def _document_text(document: str | bytes | bytearray | memoryview | os.PathLike[str],
                   file: str | None) -> tuple[str, str]:
    """The text of ``load_json``'s document and the name its errors give."""
    limit = _adgraph._max_document_bytes
    if isinstance(document, (bytes, bytearray, memoryview)):
        data = bytes(document)
        name = file or "<document>"
        if len(data) > limit:
            raise JsonError(f"{name}: load_json: the document is larger than "
                            f"{limit >> 20} MiB, the limit for one graph document")
        return _decoded(data, name), name
    if not isinstance(document, (str, os.PathLike)):
        raise JsonError(f"load_json: document: expected a file name (str or os.PathLike), "
                        f"the document's text (str) or its UTF-8 bytes, got "
                        f"{type(document).__name__} {document!r:.60}")
    if isinstance(document, str):
        text = document[1:] if document.startswith("\ufeff") else document
        if file is not None or text.lstrip().startswith("{"):
            name = file or "<document>"
            if len(text) > limit:
                raise JsonError(f"{name}: load_json: the document is larger than "
                                f"{limit >> 20} MiB, the limit for one graph document")
            return text, name
    name = os.fspath(document)
    return _decoded(_adgraph._read_document(name), name), name


def load_json(document: str | bytes | bytearray | memoryview | os.PathLike[str],
              file: str | None = None) -> types.SimpleNamespace:
    """Builds the graph of a driver document, as ``adgraph-run`` would.

    Parameters
    ----------
    document : str, bytes or os.PathLike
        A path to the document, or (with ``file`` given, or when it starts
        with ``{``, after an optional byte order mark) its text; bytes are
        the document's UTF-8 text. At most 64 MiB, as ``adgraph-run``
        reads.
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
        ``adgraph.JsonError`` naming the file, node and field (text that is
        not UTF-8 too, with the offset of its first bad byte).
    """
    text, file = _document_text(document, file)
    loaded = _adgraph._load_json(text, file)
    if loaded["optimize"] is not None:
        loaded["optimize"] = types.SimpleNamespace(**loaded["optimize"])
    return types.SimpleNamespace(**loaded)
