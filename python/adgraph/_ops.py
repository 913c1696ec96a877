"""Python functions for the ops of the registry, generated from it: an op
registered in C++ (or with :func:`adgraph.custom_op`) becomes
``adgraph.<name>(*inputs, **attrs)`` with its documentation.

Besides its attributes, every op function takes two keywords of its own:
the node's name and its control edges (Values that must run first). An op
attribute must never be shadowed by them, so each has two spellings:

- ``name=`` / ``name_=``: the node's name;
- ``after=`` / ``control_after=``: the control edges.

The long spellings (``name_``, ``control_after``) always mean the node's
name and its control edges. The short ones mean them too, unless the op has
an attribute of that name: then the short keyword is the attribute. So
``adgraph.pad(x, axis=0, before=2, after=1)`` pads, and pad's control edges
go through ``control_after=``; each op's help() says which keywords it
takes. We chose this over renaming the control keyword project-wide
(every existing ``after=`` call keeps working) and over renaming pad's
attribute (attribute names are shared with C++'s ``pad(x, axis, before,
after)`` and with JSON graph documents).
"""

from __future__ import annotations

import inspect
import textwrap
import types
import typing
from collections.abc import Callable

from . import _adgraph

# An OpDef as _adgraph.describe_op gives it.
OpDict = dict[str, typing.Any]

# The short and the long spelling of each keyword an op function takes
# besides its attributes.
NAME_KEYWORDS = ("name", "name_")
CONTROL_KEYWORDS = ("after", "control_after")


def _keywords(op: OpDict) -> tuple[list[str], list[str]]:
    """(name keywords, control keywords) op ``op`` takes: the spellings that
    are not attributes of it."""
    attrs = {a["name"] for a in op["attrs"]}
    return ([k for k in NAME_KEYWORDS if k not in attrs],
            [k for k in CONTROL_KEYWORDS if k not in attrs])


def _indented(text: str, indent: str = "    ") -> list[str]:
    """``text`` wrapped to 79 columns, each line indented."""
    return textwrap.wrap(text, 79, initial_indent=indent, subsequent_indent=indent) or [indent]


def _doc_inputs(op: OpDict, lines: list[str]) -> None:
    docs = op.get("input_docs") or []
    if not docs:
        inputs = ", ".join(op["inputs"]) + (", ..." if op["variadic"] else "")
        lines.append(f"Inputs: {inputs or '(none; pass the graph first)'}")
        return
    lines += ["Inputs (positional, in this order)", "----------------------------------"]
    for k, name in enumerate(op["inputs"]):
        repeat = ", ..." if op["variadic"] and k == len(op["inputs"]) - 1 else ""
        lines.append(f"{name}{repeat}")
        lines += _indented(docs[k] if k < len(docs) else "")


def _doc_outputs(op: OpDict, lines: list[str]) -> None:
    docs = op.get("output_docs") or []
    outputs = op["num_outputs"]
    if not docs:
        lines.append(f"Returns {'one Value' if outputs == 1 else 'a tuple of Values'}.")
        return
    if outputs == 1:
        lines += ["Returns", "-------", "one Value"]
        lines += _indented(docs[0])
        return
    if outputs == 0:
        lines += ["Returns", "-------", "a tuple of Values"]
        for doc in docs:
            lines += _indented(doc)
        return
    lines += ["Returns", "-------", f"a tuple of {outputs} Values, in this order:"]
    for k, doc in enumerate(docs):
        lines += _indented(f"[{k}] {doc}")


def _doc(op: OpDict) -> str:
    """The docstring of op ``op``'s function, from its OpDef: its math, its
    inputs and outputs in order, what the ranks exchange (communication
    ops), its attributes and the keywords every op takes."""
    lines = [op["doc"] or op["name"], ""]
    _doc_inputs(op, lines)
    lines.append("")
    _doc_outputs(op, lines)
    if op.get("ranks_doc"):
        lines += ["", "Ranks", "-----"] + _indented(op["ranks_doc"])
    if op["attrs"]:
        lines += ["", "Attributes", "----------"]
        for a in op["attrs"]:
            default = "required" if a["default"] is None else f"default {a['default']!r}"
            lines.append(f"{a['name']} : {a['type']} ({default})")
            if a["doc"]:
                lines.append(f"    {a['doc']}")
    names, controls = _keywords(op)
    lines += [""] + textwrap.wrap(
        "Keyword arguments " + " or ".join(f"``{k}``" for k in names) +
        " (the node's name) and " + " or ".join(f"``{k}``" for k in controls) +
        " (control edges: a Value or a list of Values that must run first).", 79)
    for (short, long), what in ((NAME_KEYWORDS, "the node's name goes"),
                                (CONTROL_KEYWORDS, "control edges go")):
        if short not in names + controls:
            lines += textwrap.wrap(f"Here ``{short}=`` is this op's attribute, and {what} "
                                   f"through ``{long}=`` (adgraph._ops says why).", 79)
    if not op["has_gradient"]:
        lines.append("This op has no gradient.")
    return "\n".join(lines)


def _signature(op: OpDict) -> inspect.Signature:
    """An inspect.Signature for help(): inputs, then the attributes and the
    name and control keywords, keyword-only."""
    P = inspect.Parameter
    params = [P("inputs", P.VAR_POSITIONAL)]
    for a in op["attrs"]:
        default = P.empty if a["default"] is None else a["default"]
        params.append(P(a["name"], P.KEYWORD_ONLY, default=default))
    names, controls = _keywords(op)
    params += [P(k, P.KEYWORD_ONLY, default=None) for k in names + controls]
    return inspect.Signature(params)


def _control_edges(op_name: str, keyword: str | None,
                   given: object) -> list[_adgraph.Value]:
    """The control edges given as ``keyword=given``: a list of Values."""
    if given is None:
        return []
    if isinstance(given, _adgraph.Value):
        return [given]
    if isinstance(given, (list, tuple)) and all(isinstance(v, _adgraph.Value) for v in given):
        return list(given)
    raise TypeError(f"{op_name}: {keyword}= takes the control edges (a Value or a list "
                    f"of Values that must run first), got {type(given).__name__} "
                    f"{given!r:.60}")


def _pop_one(op_name: str, kwargs: dict[str, typing.Any], keywords: list[str],
             what: str) -> tuple[str | None, typing.Any]:
    """The value of whichever of ``keywords`` was given (None if none);
    TypeError if several were."""
    given = [k for k in keywords if k in kwargs]
    if len(given) > 1:
        raise TypeError(f"{op_name}: {what} given twice ({' and '.join(given)}=); "
                        "give one")
    if given:
        return given[0], kwargs.pop(given[0])
    return (keywords[-1] if keywords else None), None


def make_op_function(op: OpDict) -> Callable[..., typing.Any]:
    """The Python function that adds a node of registered op ``op`` (a dict
    from ``_adgraph.describe_op``)."""
    op_name = op["name"]
    single = op["num_outputs"] == 1
    names, controls = _keywords(op)

    def build(*inputs: typing.Any, **kwargs: typing.Any) -> typing.Any:
        graph: _adgraph.Graph | None = None
        if inputs and isinstance(inputs[0], _adgraph.Graph):
            graph, inputs = inputs[0], inputs[1:]
        node_name = _pop_one(op_name, kwargs, names, "the node's name")[1] or ""
        keyword, after = _pop_one(op_name, kwargs, controls, "control edges")
        after = _control_edges(op_name, keyword, after)
        if graph is None:
            for x in inputs:
                if isinstance(x, _adgraph.Value):
                    graph = x.graph
                    break
        if graph is None:
            raise _adgraph_errors().GraphError(
                f'{op_name}: pass the graph first (adgraph.{op_name}(graph, ...)) '
                'when no input is a Value')
        outs = _adgraph.add_node(graph, op_name, list(inputs), kwargs, node_name, after)
        return outs[0] if single and len(outs) == 1 else tuple(outs)

    build.__name__ = op_name
    build.__qualname__ = op_name
    build.__doc__ = _doc(op)
    build.__signature__ = _signature(op)  # type: ignore[attr-defined]
    return build


def _adgraph_errors() -> types.ModuleType:
    from . import _errors
    return _errors


def generate(namespace: dict[str, typing.Any]) -> None:
    """Adds a function for every registered op to ``namespace`` (a module's
    globals), without replacing names the package defines itself."""
    for op in _adgraph.registered_ops():
        if op["name"] not in namespace:
            namespace[op["name"]] = make_op_function(op)
