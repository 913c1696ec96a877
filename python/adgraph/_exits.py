"""How a process of a job of several ranks ends (issue #56, mechanism 5).

An uncaught ``SystemExit`` (``raise SystemExit(1)``, ``exit()``) bypasses
``sys.excepthook`` and every other Python hook: its status is first seen by
C's ``exit()``. MPI_Finalize, which waits for every rank, would come before
that, so a rank leaving with a failure would wait there for ranks that wait
for it in a collective, until their deadline. :func:`finish_mpi` (adgraph's
atexit handler) therefore hands such an exit to
``_adgraph.finish_mpi_after_exit``, which lets ``exit()``'s status decide.
"""

from __future__ import annotations

import sys

from . import _adgraph

# Set by adgraph's ``sys.exit`` when called with a success status: the
# SystemExit that follows is a clean one.
success_requested = False


def leaving_through_system_exit() -> bool:
    """Whether the interpreter ends through an uncaught SystemExit rather
    than at the end of its script.

    CPython removes ``__file__`` from ``__main__`` once the script ran to its
    end (or failed with another exception, which the excepthook handles),
    before the atexit handlers run; an uncaught SystemExit leaves through
    ``Py_Exit``, which skips that step. A program run with ``-m`` keeps
    ``__file__`` either way and takes the careful path, which is right for a
    clean exit too; with ``-c`` there is no ``__file__`` at all.
    """
    main = sys.modules.get("__main__")
    return main is not None and "__file__" in vars(main)


def finish_mpi() -> None:
    """At interpreter exit: finalises MPI if adgraph started it, or, when
    leaving through an uncaught SystemExit of unknown status on several
    ranks, lets the exit status decide between finalising and ending the
    job (see the module's docstring)."""
    if leaving_through_system_exit() and not success_requested:
        _adgraph.finish_mpi_after_exit()
    else:
        _adgraph.finish_mpi()
