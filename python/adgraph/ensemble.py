"""An ensemble of sub-problems (members: seismic shots, scenarios, data
batches) on sub-communicators, with an exact total: loss and gradient
bitwise the same for any number of groups and any spatial layout.

The ranks of ``comm`` (size G·P) form G groups of P ranks. Each group
solves its share of the S members on its own communicator (``group_comm``,
spatially sharded over P ranks); the ranks with the same spatial position
in every group form ``cross_comm``. The control is sharded over space and
never gathered: every group holds the same shard, and with the same loss
and gradient every group's L-BFGS runs in lockstep to the same iterates.

Sketch (every rank; ``terms(rows)`` is the user's: each member's per-point
loss terms, [k, ...], built from the control tiled to one row per member;
examples/python/wave_fwi.py is the full program)::

    ens = Ensemble(members=S, groups=G, patches=P)
    g = ag.Graph(comm=ens.group_comm)
    grid = agg.Grid(shape, procs, comm=ens.group_comm)
    c = g.placeholder("c", grid.local_shape())
    rows = ens.tile(c)                                 # [k, *local]
    losses = ens.member_totals(terms(rows))            # [k], exact over space
    loss = ens.objective(c, rows, losses)              # for ag.minimize
    result = ag.minimize(loss, [c], [c0], layout="sharded", feeds=...)

Why bitwise: each member's gradient is its own row (a stencil's cotangent
of a batched field is per batch entry; the AD sweep never sums members),
so row b is the same bits whichever group computes it. The rows of every
group are summed with ``mpi_total_rows`` on ``cross_comm`` (exact, rounded
once per entry) and broadcast back; each member's loss is an exact total
over space (``mpi_total_rows`` on the group) and the members' losses are
summed exactly the same way. An exact sum does not depend on the order or
grouping of its terms, hence not on G or on the spatial layout.
"""

from __future__ import annotations

import numbers
import typing

import numpy as np

import adgraph as ag
from . import _adgraph
from ._errors import OptionsError

if typing.TYPE_CHECKING:
    import mpi4py.MPI

__all__ = ["Ensemble", "assignment"]


def assignment(members: int, groups: int) -> list[range]:
    """The members of each group: contiguous blocks, the first
    ``members % groups`` groups one member more (as a grid axis is split).

    Parameters
    ----------
    members : int
        S, the number of members (>= groups).
    groups : int
        G, the number of groups (>= 1).

    Returns
    -------
    list of range
        ``groups`` ranges of member indices, in order, covering 0 … S − 1.
    """
    q, extra = divmod(int(members), int(groups))
    out, start = [], 0
    for g in range(int(groups)):
        n = q + (1 if g < extra else 0)
        out.append(range(start, start + n))
        start += n
    return out


def _count(name: str, value: object) -> int:
    """``value`` as an int, or an OptionsError naming ``name`` (1.5, "2",
    None or True were truncated, converted or failed in ``int()``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OptionsError(f"{name}: Ensemble: expected an integer, got {value!r}")
    return int(value)


class Ensemble:
    """S members on G groups of P ranks, with exact totals over members.

    Parameters
    ----------
    members : int
        S, the number of members (>= groups). Group g gets the members
        ``assignment(S, G)[g]``: contiguous blocks, the first S mod G groups
        one more.
    groups : int
        G, the number of groups (>= 1).
    patches : int, optional
        P, the ranks of one group (its spatial patches). Default: size / G.
        ``comm.size`` must be G·P.
    comm : adgraph.Communicator or mpi4py.MPI.Intracomm, optional
        The ranks of the ensemble (default: the world).

    Raises
    ------
    OptionsError
        On every rank, naming ``groups``, ``patches`` or ``members``, when
        one is not an integer (bool included), size ≠ G·P, G < 1, P < 1 or
        S < G.

    Attributes
    ----------
    comm, group_comm, cross_comm : adgraph.Communicator
        The whole ensemble; this rank's group (P ranks, in ``comm``'s rank
        order); the ranks at this rank's spatial position, one per group
        (its rank is the group's index).
    group : int
        This rank's group, ``comm.rank // P``.
    position : int
        This rank's spatial position, ``comm.rank % P`` (its rank in
        ``group_comm``).
    members : range
        This group's members (global indices).
    size, groups, patches : int
        S, G and P.
    """

    comm: _adgraph.Communicator
    group_comm: _adgraph.Communicator
    cross_comm: _adgraph.Communicator
    group: int
    position: int
    members: range
    size: int
    groups: int
    patches: int

    def __init__(self, members: int, groups: int, patches: int | None = None,
                 comm: _adgraph.Communicator | mpi4py.MPI.Intracomm | None = None) -> None:
        if not isinstance(comm, _adgraph.Communicator):
            comm = _adgraph.communicator(comm)
        size = comm.size
        self.groups = _count("groups", groups)
        members = _count("members", members)
        if patches is not None:
            patches = _count("patches", patches)
        if self.groups < 1:
            raise OptionsError(f"groups: Ensemble: expected at least one group, got {groups}")
        if patches is None:
            if size % self.groups:
                raise OptionsError(f"groups: Ensemble: {size} ranks do not split into "
                                   f"{self.groups} groups of equal size")
            patches = size // self.groups
        self.patches = int(patches)
        if self.patches < 1 or self.groups * self.patches != size:
            raise OptionsError(f"patches: Ensemble: {self.groups} groups of {patches} "
                               f"ranks need {self.groups * self.patches} ranks, "
                               f"the communicator has {size}")
        self.size = int(members)
        if self.size < self.groups:
            raise OptionsError(f"members: Ensemble: {self.size} members for "
                               f"{self.groups} groups; each group needs at least one")
        self.comm = comm
        self.group = comm.rank // self.patches
        self.position = comm.rank % self.patches
        self.group_comm = comm.split(self.group, comm.rank)
        self.cross_comm = comm.split(self.position, comm.rank)
        self.members = assignment(self.size, self.groups)[self.group]

    def tile(self, control: _adgraph.Value) -> _adgraph.Value:
        """``control`` (this rank's shard, a Value) repeated once per member
        of this group: ``[k, *control.shape]``. Build each member from its
        own row so that its gradient stays a row of its own."""
        shape = [int(n) for n in control.shape]
        one = ag.reshape(control, shape=[1] + shape)
        return ag.broadcast_to(one, shape=[len(self.members)] + shape)

    def member_totals(self, terms: _adgraph.Value) -> _adgraph.Value:
        """Each member's terms summed exactly over the group's ranks.

        Parameters
        ----------
        terms : Value
            ``[k, ...]``: this rank's terms of each of this group's k
            members (in a graph on ``group_comm``).

        Returns
        -------
        Value
            ``[k]``: on the group's rank 0 each member's exact total
            (rounded once); zeros on the other ranks of the group.
        """
        k = len(self.members)
        flat = ag.reshape(terms, shape=[k, -1])
        return ag.mpi_total_rows(ag.transpose(flat), root=0)

    def total_rows(self, rows: _adgraph.Value) -> _adgraph.Value:
        """``rows`` ([k, ...], one per member of this group) summed over
        every member of every group, exact and rounded once per entry, on
        every rank of ``cross_comm`` (``mpi_total_rows`` there, then
        ``mpi_bcast``)."""
        with ag.comm_scope(rows.graph, self.cross_comm):
            total = ag.mpi_total_rows(rows, root=0)
            return ag.mpi_bcast(total, root=0)

    def objective(self, control: _adgraph.Value, rows: _adgraph.Value,
                  losses: _adgraph.Value) -> _adgraph.Value:
        """The ensemble's loss for ``ag.minimize(..., layout="sharded")``
        in a graph on ``group_comm``.

        Parameters
        ----------
        control : Value
            The placeholder (this rank's shard of the control).
        rows : Value
            ``tile(control)``, from which the members were built.
        losses : Value
            ``[k]``: ``member_totals`` of this group's members (each
            member's loss on the group's rank 0, zeros elsewhere).

        Returns
        -------
        Value
            A scalar: on rank 0 of every group the total Σ_members loss
            (exact, rounded once), 0 on the other ranks, so that the sum
            over the group is the total; its gradient with respect to
            ``control`` is this rank's shard of Σ_members ∂loss/∂control,
            exact and rounded once per entry, the same in every group.
            One ``mpi_total_rows`` on ``cross_comm`` carries both.
        """
        k = len(self.members)
        shape = [int(n) for n in control.shape]
        n = int(np.prod(shape, dtype=np.int64))
        per_row = ag.gradients(ag.sum(losses), [rows])[0]
        both = ag.concat(ag.reshape(per_row, shape=[k, n]),
                         ag.reshape(losses, shape=[k, 1]), axis=1)
        total = ag.stop_gradient(self.total_rows(both))
        gradient = ag.reshape(total[:n], shape=shape)
        f = ag.reshape(total[n:], shape=[])
        # Value f (control − control is 0 exactly); derivative with respect
        # to control: the gradient, exactly (ȳ = 1 times it). stop_gradient
        # keeps the builders out of the loop adjoint that made the rows.
        return f + ag.sum((control - ag.stop_gradient(control)) * gradient)

    def __repr__(self) -> str:
        return (f"Ensemble(members={self.size}, groups={self.groups}, "
                f"patches={self.patches}, group={self.group}, "
                f"members_here={list(self.members)})")
