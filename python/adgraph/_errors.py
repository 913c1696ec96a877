"""adgraph's exception classes; the C++ runtime's errors arrive as these,
with their messages unchanged (``file: node "n" (op): field: detail``)."""


class Error(RuntimeError):
    """Base class of every error adgraph raises for a user's mistake."""


class GraphError(Error):
    """A malformed graph: unknown op or input, bad attribute, missing gradient."""


class ShapeError(Error, ValueError):
    """Shapes that do not fit together, raised when the node is built."""


class JsonError(Error):
    """A JSON graph document that cannot be loaded."""


class OptionsError(Error, ValueError):
    """An option out of its valid range, naming the field."""


class RunError(Error):
    """A run-time failure: missing feed, wrong feed shape, ranks that disagree,
    a Python op that returned the wrong shape."""


class ArgumentError(Error, TypeError):
    """An argument of the wrong type at the Python boundary; the message
    names the function, the argument, what it got and what it accepts."""
