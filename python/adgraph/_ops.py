"""Python functions for the ops of the registry, generated from it: an op
registered in C++ (or with :func:`adgraph.custom_op`) becomes
``adgraph.<name>(*inputs, **attrs)`` with its documentation."""

from . import _adgraph


def _doc(op):
    lines = [op["doc"] or op["name"], ""]
    inputs = ", ".join(op["inputs"]) + (", ..." if op["variadic"] else "")
    lines.append(f"Inputs: {inputs or '(none; pass the graph first)'}")
    if op["attrs"]:
        lines.append("")
        lines.append("Attributes")
        lines.append("----------")
        for a in op["attrs"]:
            default = "required" if a["default"] is None else f"default {a['default']!r}"
            lines.append(f"{a['name']} : {a['type']} ({default})")
            if a["doc"]:
                lines.append(f"    {a['doc']}")
    lines.append("")
    lines.append("Keyword arguments ``name`` (the node's name) and ``after`` (Values "
                 "that must run first) are accepted by every op.")
    outputs = op["num_outputs"]
    lines.append(f"Returns {'one Value' if outputs == 1 else 'a tuple of Values'}.")
    if not op["has_gradient"]:
        lines.append("This op has no gradient.")
    return "\n".join(lines)


def make_op_function(op):
    """The Python function that adds a node of registered op ``op`` (a dict
    from ``_adgraph.describe_op``)."""
    name = op["name"]
    single = op["num_outputs"] == 1

    def build(*inputs, name_=None, after=(), **attrs):
        graph = None
        if inputs and isinstance(inputs[0], _adgraph.Graph):
            graph, inputs = inputs[0], inputs[1:]
        node_name = attrs.pop("name", None) or name_ or ""
        if graph is None:
            for x in inputs:
                if isinstance(x, _adgraph.Value):
                    graph = x.graph
                    break
        if graph is None:
            raise _adgraph_errors().GraphError(
                f'{name}: pass the graph first (adgraph.{name}(graph, ...)) '
                'when no input is a Value')
        outs = _adgraph.add_node(graph, name, list(inputs), attrs, node_name, list(after))
        return outs[0] if single and len(outs) == 1 else tuple(outs)

    build.__name__ = name
    build.__qualname__ = name
    build.__doc__ = _doc(op)
    return build


def _adgraph_errors():
    from . import _errors
    return _errors


def generate(namespace):
    """Adds a function for every registered op to ``namespace`` (a module's
    globals), without replacing names the package defines itself."""
    for op in _adgraph.registered_ops():
        if op["name"] not in namespace:
            namespace[op["name"]] = make_op_function(op)
