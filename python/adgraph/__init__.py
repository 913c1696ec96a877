"""adgraph from Python: static computational graphs with reverse- and
forward-mode automatic differentiation in which MPI communication is part of
the graph. A thin layer over the C++ runtime; nothing is reimplemented here.

Quick tour::

    import numpy as np
    import adgraph as ag

    g = ag.Graph()
    x = g.placeholder("x", (3,))
    A = g.constant(np.array([[1.0, 2, 0], [0, 1, -1]]))
    b = g.constant(np.array([1.0, 2.0]))
    loss = ag.sum(ag.square(ag.matvec(A, x) - b))
    grad = ag.gradient(loss, x)
    L, dL = ag.Session(g).run([loss, grad], {x: np.ones(3)})   # 8.0, [4, 4, 4]

Every op of the registry is a function here (``help(adgraph.mpi_bcast)``).
Run under ``mpirun -n P python3 script.py``; every rank builds the same
graph. MPI is started at import unless mpi4py (or the program) already did.
"""

import atexit as _atexit
import builtins as _builtins
import contextlib as _contextlib
import inspect as _inspect
import sys as _sys
import traceback as _traceback
import types as _types
import typing as _typing
from collections.abc import (Callable as _Callable, Iterable as _Iterable,
                             Iterator as _Iterator, Mapping as _Mapping, Sequence as _Sequence)

import numpy as _np
from numpy.typing import ArrayLike as _ArrayLike, NDArray as _NDArray

from ._errors import (ArgumentError, Error, GraphError, JsonError, OptionsError, RunError,
                      ShapeError)
from . import _adgraph
from . import _exits
from ._signatures import explain_type_errors as _explain_type_errors

# Before anything takes a function from the module: wrong argument types
# then name the function and the argument (ArgumentError).
_explain_type_errors(_adgraph)

_adgraph.start_mpi()
_atexit.register(_exits.finish_mpi)

from ._adgraph import (  # noqa: E402  (MPI must be up first)
    Communicator,
    GradientCheckResult,
    Graph,
    LoopArgs,
    Session,
    Value,
    checkpoint_schedule,
    communicator,
    gradients,
    jvp,
    loop_adjoints,
    loop_stats,
    petsc_available,
)
from ._optimize import minimize, scipy_objective  # noqa: E402
from ._documents import load_json  # noqa: E402
from ._cli import add_table_options, table_values  # noqa: E402
from . import solvers  # noqa: E402
from . import sparse  # noqa: E402
from . import ensemble  # noqa: E402  (shots on sub-communicators, exact totals)
from . import _ops  # noqa: E402
from . import _indexing  # noqa: E402

if _typing.TYPE_CHECKING:
    import mpi4py.MPI

# Feeds: {placeholder or its name: array}.
_Feeds = _Mapping[Value, _ArrayLike] | _Mapping[str, _ArrayLike] | None
# One float64 array: what a Python op's functions receive.
_Array = _NDArray[_np.float64]

# numpy defers to Value's reflected operators (array + value, array * value).
Value.__array_ufunc__ = None
Value.__getitem__ = _indexing.getitem  # type: ignore[assignment]


def _to_mpi4py(self: Communicator) -> "mpi4py.MPI.Intracomm":
    """This communicator as an ``mpi4py.MPI.Intracomm`` (the same MPI
    communicator, adgraph's duplicate: valid while this object lives)."""
    from mpi4py import MPI
    return MPI.Intracomm(MPI.Comm.f2py(self.fortran_handle()))


Communicator.to_mpi4py = _to_mpi4py  # type: ignore[assignment]


def gradient(y: Value, x: Value, grad_y: Value | None = None) -> Value:
    """dy/dx with x's shape (``gradients(y, [x], grad_y)[0]``); for several
    x, ``gradients(y, [x1, x2, ...])``."""
    if not isinstance(x, Value):
        text = repr(x)
        text = text if len(text) <= 60 else text[:57] + "..."
        hint = "; for several, gradients(y, xs)" if isinstance(x, (list, tuple)) else ""
        raise ArgumentError(f"gradient(): argument 'x': expected a Value{hint}, "
                            f"got {type(x).__name__} {text}")
    return gradients(y, [x], grad_y)[0]


def _value_list(function: str, argument: str, values: _Iterable[Value]) -> list[Value]:
    """``values`` (a sequence of Values) as a list; anything else is an
    ArgumentError naming the function and the argument, as gradients()'s."""
    def refuse(got: object, where: str = "") -> _typing.NoReturn:
        text = repr(got)
        text = text if len(text) <= 60 else text[:57] + "..."
        what = "a Value" if where else "a sequence of Values (List[Value])"
        raise ArgumentError(f"{function}(): argument {argument!r}{where}: expected {what}, "
                            f"got {type(got).__name__} {text}")
    if isinstance(values, (str, bytes, Value)):
        refuse(values)
    try:
        out = list(values)
    except TypeError:
        refuse(values)
    for k, v in enumerate(out):
        if not isinstance(v, Value):
            refuse(v, f" entry {k}")
    return out


def loop(n: int, init: _Sequence[Value], invariants: _Sequence[Value],
         body: _Callable[[_typing.Any],
                         _Sequence[Value] | tuple[_Sequence[Value], _Sequence[Value]]],
         *, xs: _Sequence[Value] = (),
         **options: str | int | _Sequence[int] | _Mapping[str, int] | None
         ) -> _types.SimpleNamespace:
    """A loop node: ``n`` steps of ``body`` (a Python function building the
    step once, into a graph of its own).

    Parameters
    ----------
    n : int
        Static trip count, >= 1.
    init : list of Value
        Initial carries c_0.
    invariants : list of Value
        Loop-invariant inputs every step reads.
    body : callable
        ``body(args)`` with ``args.carries``, ``args.invariants``,
        ``args.step`` (t as a scalar Value) and ``args.graph``; returns the
        next carries (a list), or ``(carries, outputs)`` with per-step
        outputs. The Values it sees belong to the body's graph and are valid
        inside the function only.
    xs : list of Value
        Per-step inputs, as ``jax.lax.scan``'s: each has a first axis of
        ``n`` rows, and step t reads row t as ``args.xs[k]``; the cotangent
        of row t is step t's, under every schedule.
    **options
        ``LoopOptions`` fields by their C++ names, read through its field
        table (an unknown name or a value out of range raises
        ``OptionsError`` naming it and, for a name, listing the valid ones):

        ``checkpoints`` (str, int or None): the adjoint's schedule, in the
        grammar of every front end: ``"all"`` (store every step),
        ``"auto"`` (binomial with about sqrt(2n) snapshots), ``s`` or
        ``"s"`` (binomial with s snapshots), ``"every:k"``,
        ``"budget:bytes"`` (``"budget:64MiB"``); None (the default): the
        graph's default (store all). ``checkpoint_schedule(text, n)`` shows
        what a text means for n steps. The older ``{"every": k}`` and
        ``{"budget": bytes}`` are still read.

        ``output_steps`` (list of int, each >= 0): steps whose outputs are
        kept, increasing, each below n (default: every step).

        ``name`` (str): the loop node's name (default: ``loop_<id>``).

    Returns
    -------
    types.SimpleNamespace
        ``carries`` (c_n), ``outputs`` (per-step outputs stacked along a new
        first axis), ``node`` (the loop node, for ``loop_stats``).
    """
    init = _value_list("loop", "init", init)
    invariants = _value_list("loop", "invariants", invariants)
    xs = _value_list("loop", "xs", xs)
    for k, x in enumerate(xs):
        if not isinstance(x, Value) or len(x.shape) == 0 or x.shape[0] != n:
            shape = tuple(x.shape) if isinstance(x, Value) else type(x).__name__
            raise GraphError(f"loop: xs[{k}] must be a Value with a first axis of {n} "
                             f"rows (one a step), got {shape}")
    step_body = body
    if xs:
        count = len(invariants)

        def step_body(args: LoopArgs) -> _typing.Any:
            view = _types.SimpleNamespace(
                carries=args.carries, invariants=args.invariants[:count], step=args.step,
                graph=args.graph,
                xs=[globals()["step_row"](x, args.step) for x in args.invariants[count:]])
            return body(view)
    carries, outputs, node = _adgraph._loop(n, init, invariants + xs, step_body, options)
    return _types.SimpleNamespace(carries=carries, outputs=outputs, node=node)


@_contextlib.contextmanager
def comm_scope(graph: Graph,
               comm: "Communicator | mpi4py.MPI.Intracomm") -> _Iterator[Communicator]:
    """Communication nodes added to ``graph`` inside the ``with`` block use
    ``comm`` (an adgraph Communicator, e.g. ``graph.comm.split(color)``, or an
    mpi4py communicator, duplicated); their adjoints and tangents use it too."""
    if not isinstance(comm, Communicator):
        comm = communicator(comm)
    scope = _adgraph._open_scope(graph, comm)
    try:
        yield comm
    finally:
        scope.close()


def check_gradients(y: Value, xs: _Sequence[Value], feeds: _Feeds,
                    **options: float) -> GradientCheckResult:
    """Compares ``gradients(y, xs)`` with central finite differences, runs
    the Taylor test and (``check_jvp=True``, the default) checks ``jvp``.

    Options keep their C++ names: ``step`` (1e-6), ``tolerance`` (1e-7),
    ``directions`` (3), ``taylor_epsilon`` (1e-2), ``taylor_steps`` (8),
    ``rate_tolerance`` (0.1), ``seed``, ``finite_differences`` (True),
    ``check_jvp`` (True), ``jvp_tolerance`` (1e-9). With communication nodes
    the checked function is the sum over ranks of y; every rank calls it.

    Returns a ``GradientCheckResult`` (``ok``, ``max_fd_error``,
    ``max_jvp_error``, ``taylor_rates``, ``jvp_taylor_rates``, ``message``),
    the same on every rank.
    """
    return _adgraph.check_gradients(y, _value_list("check_gradients", "xs", xs), feeds,
                                    options)


# The keyword jvp= (the API) shadows ag.jvp inside the function only.
def custom_op(name: str,
              forward: _Callable[..., _ArrayLike],
              vjp: _Callable[[list[_Array], _Array, _Array],
                             _ArrayLike | _Sequence[_ArrayLike | None]],
              jvp: _Callable[[list[_Array], list[_Array]], _ArrayLike] | None = None,  # noqa: F811
              shape: _Callable[[list[tuple[int, ...]]], _Sequence[int]] | None = None,
              doc: str | None = None, num_inputs: int | None = None) -> _Callable[..., Value]:
    """Registers an op written in Python and returns the function that adds
    its nodes (also available as ``adgraph.<name>``).

    Parameters
    ----------
    name : str
        A new op name (``name_vjp`` and ``name_jvp`` are taken too).
    forward : callable
        ``forward(*inputs) -> array``: read-only float64 views of the inputs
        (valid during the call only); the result must have the output's
        shape.
    vjp : callable
        ``vjp(inputs, output, cotangent) -> list`` of one cotangent per input
        (None for zero), each of its input's shape.
    jvp : callable, optional
        ``jvp(inputs, tangents) -> array``, the output's tangent. Without it,
        forward mode (``jvp``, ``check_gradients(check_jvp=True)``) raises a
        GraphError naming the op.
    shape : callable, optional
        ``shape(input_shapes) -> tuple``; default: the first input's shape.
    num_inputs : int, optional
        Default: the number of ``forward``'s positional parameters.

    An exception raised inside reaches the caller of ``Session.run`` with
    its own type and message. The op runs inside loops and under every
    checkpoint schedule like a C++ op.
    """
    if num_inputs is None:
        params = _inspect.signature(forward).parameters.values()
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            raise OptionsError(f"custom_op {name!r}: forward takes *args; give num_inputs=")
        num_inputs = _builtins.sum(
            1 for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    _adgraph._register_python_op(name, num_inputs, forward, vjp, jvp, shape, doc or "")
    function = _ops.make_op_function(_adgraph.describe_op(name))
    globals()[name] = function
    # Its derivative ops (name_vjp, name_jvp) are registered ops too.
    _ops.generate(globals())
    return function


def _mpi_excepthook(kind: type[BaseException], value: BaseException,
                    tb: _types.TracebackType | None) -> None:
    """An uncaught exception on one rank ends the whole job (with this
    rank's traceback) instead of leaving the other ranks waiting for it."""
    size = communicator().size
    rank = communicator().rank
    prefix = f"adgraph: rank {rank} of {size}: uncaught exception, ending the job\n"
    _sys.stderr.write(prefix + "".join(_traceback.format_exception(kind, value, tb)))
    _sys.stderr.flush()
    if size > 1:
        _adgraph.abort_job(1)
    _previous_excepthook(kind, value, tb)


_previous_excepthook = _sys.excepthook
if communicator().size > 1:
    _sys.excepthook = _mpi_excepthook

_ops.generate(globals())


__all__ = [name for name in globals() if not name.startswith("_")]


# Issue #56 (kept at the end of the file): exit paths and borrowed
# communicators.
def _exit_ending_the_job(status: str | int | None = None) -> _typing.NoReturn:
    """``sys.exit`` that, with a failure status on a job of several ranks,
    ends the whole job (SystemExit bypasses the excepthook, and the other
    ranks would wait for this one until their deadline): unless every rank
    calls it with the same status within 2 s (a bad option every rank saw),
    when each leaves quietly with that status. A success status is
    remembered: the exit that follows finalises MPI as usual
    (``_exits``)."""
    if status is None or status == 0:
        _exits.success_requested = True
    elif communicator().size > 1:
        code = status if isinstance(status, int) and 0 < status < 256 else 1
        if _adgraph.agree_to_exit(code, 2.0):
            _previous_exit(status)
        rank, size = communicator().rank, communicator().size
        _sys.stderr.write(f"adgraph: rank {rank} of {size}: sys.exit({status!r}), "
                          "ending the job\n")
        _sys.stderr.flush()
        _adgraph.abort_job(status if isinstance(status, int) and 0 < status < 256 else 1)
    _previous_exit(status)


_previous_exit = _sys.exit
_sys.exit = _exit_ending_the_job


def _borrowed_mpi4py(self: Communicator) -> "mpi4py.MPI.Intracomm":
    """This communicator as an ``mpi4py.MPI.Intracomm`` (the same MPI
    communicator, adgraph's duplicate: valid while this object lives). It is
    borrowed: ``Free()`` raises ``adgraph.Error`` (``Dup()`` gives one of
    your own), since freeing it would leave its graphs on a dead
    communicator."""
    from mpi4py import MPI

    class BorrowedIntracomm(MPI.Intracomm):
        """adgraph's communicator, lent to mpi4py: do not free it."""

        def Free(self) -> _typing.NoReturn:
            raise Error("Communicator.to_mpi4py(): this communicator is adgraph's "
                        "own (its graphs use it) and cannot be freed; Dup() it for "
                        "one of your own")

        def Disconnect(self) -> None:
            self.Free()

    # What it makes is the caller's own (a plain Intracomm, freeable).
    for maker in ("Dup", "Clone", "Split", "Split_type", "Create", "Create_group"):
        def make(self: MPI.Intracomm, *args: _typing.Any,
                 _maker: _typing.Any = getattr(MPI.Intracomm, maker),
                 **kwargs: _typing.Any) -> MPI.Intracomm:
            return MPI.Intracomm(_maker(self, *args, **kwargs))
        setattr(BorrowedIntracomm, maker, make)

    return BorrowedIntracomm(MPI.Comm.f2py(self.fortran_handle()))


Communicator.to_mpi4py = _borrowed_mpi4py  # type: ignore[assignment]
