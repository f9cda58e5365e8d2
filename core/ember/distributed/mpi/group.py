"""``ProcessGroupMPI``: every collective as a non-blocking MPI call on host-staged buffers.

A group has three communicators over the same ranks, each its own matching space: ``comm`` for
collectives (sync and async), ``p2p`` for send/recv/isend/irecv (so a receive from any source,
with any tag, can only ever match a user's point-to-point message, whatever collectives are in
flight, and however an MPI library or a future engine builds its collectives), and ``ctl`` for
the status board and monitored_barrier."""
from __future__ import annotations

import threading
import time
import numpy as np

from .._types import DistBackendError
from ..contract import ProcessGroupBackend
from .engine import (Staged, divide_in_place, guarded_barrier, idup, mpi, poll, reduce_op)
from .progress import MPIWork, progress
from .status import StatusBoard
from ..work import CompletedWork

_MONITOR_TAG = 7331          # monitored_barrier's messages on the control communicator
_world = None                # COMM_WORLD duplicated once: the parent of every group's comms
_groups = []                 # live groups, for cleanup at exit


def _world_comm(deadline, describe):
    global _world
    if _world is None:
        _world = idup(mpi().COMM_WORLD, deadline, describe)
    return _world


def create(context):
    """The factory registered as backend "mpi"."""
    MPI = mpi()
    timeout_s = context.timeout.total_seconds()
    deadline = time.monotonic() + timeout_s
    ranks = list(context.global_ranks)

    def describe():
        return (f"ember.distributed: setting up MPI process group '{context.group_name}' "
                f"(ranks {_ranks_text(ranks)}) timed out on rank {ranks[context.rank]} after "
                f"{timeout_s:g} s: not every rank reached init_process_group/new_group")

    world = _world_comm(deadline, describe)
    if ranks == list(range(world.Get_size())):
        base = idup(world, deadline, describe)
    else:
        # every member is known to be here (new_group ran a barrier first): Create_group
        # blocks only among the members
        members = world.Get_group().Incl(ranks)
        base = world.Create_group(members, context.options.get("group_index", 0) % 32768)
        members.Free()
    if base.Get_rank() != context.rank or base.Get_size() != context.size:
        raise DistBackendError(f"MPI process group '{context.group_name}': MPI says rank "
                               f"{base.Get_rank()} of {base.Get_size()}, ember expected "
                               f"{context.rank} of {context.size}")
    ctl = idup(base, deadline, describe)
    p2p = idup(base, deadline, describe)
    guarded_barrier(ctl, deadline, "status board", describe)
    board = StatusBoard(ctl)
    group = ProcessGroupMPI(context, base, ctl, board, p2p)
    progress.add_board(board)
    _groups.append(group)
    del MPI
    return group


def _ranks_text(ranks) -> str:
    if ranks == list(range(len(ranks))) and len(ranks) > 2:
        return f"0-{len(ranks) - 1}"
    return ", ".join(str(r) for r in ranks)


class ProcessGroupMPI(ProcessGroupBackend):
    name = "mpi"

    def __init__(self, context, comm, ctl, board, p2p):
        super().__init__(context)
        self.comm = comm
        self.p2p = p2p
        self.ctl = ctl
        self.board = board
        self.group_name = context.group_name
        self.timeout_s = context.timeout.total_seconds()
        self._seq = 0
        self._broken = None
        self._closed = False
        # numbering and starting a collective is one step: a comm hook's callback on the
        # communication thread may issue one while the main thread does too
        self._issue_lock = threading.Lock()

    # -- issuing ---------------------------------------------------------------------------------
    def _check(self, op):
        if self._closed:
            raise DistBackendError(f"{op}: process group '{self.group_name}' was destroyed")
        if self._broken is not None:
            first = str(self._broken).splitlines()[0]
            raise DistBackendError(f"{op}: process group '{self.group_name}' can't be used any "
                                   f"more: an earlier operation failed ({first})")

    def _collective(self, op, count, start, outputs, posts):
        with self._issue_lock:
            self._check(op)
            self._seq += 1
            seq = self._seq
            self.board.enter(seq, op, count)
            return self._start(op, seq, start, outputs,
                               list(posts) + [lambda: self._done(seq)])

    def _start(self, op, seq, start, outputs, posts, status=None):
        try:
            reqs = start()
        except Exception as e:  # MPI rejected the call: the group's state is unknown now
            raise self._fail(op, e) from e
        return MPIWork(self, op, seq, reqs, outputs, posts, status)

    def _done(self, seq):
        if not self._closed:
            self.board.finish(seq)

    # -- collectives -----------------------------------------------------------------------------
    def allreduce(self, tensor, op):
        st = Staged(tensor)
        mop, avg = reduce_op(op, st.arr.dtype)
        posts = ([lambda: divide_in_place(st.arr, self.size())] if avg else []) + [st.finish]
        return self._collective(
            "all_reduce", tensor.numel(),
            lambda: [self.comm.Iallreduce(mpi().IN_PLACE, st.buf(), mop)], [tensor], posts)

    def broadcast(self, tensor, src):
        root = self.rank() == src
        st = Staged(tensor, read=root, write=not root)
        return self._collective("broadcast", tensor.numel(),
                                lambda: [self.comm.Ibcast(st.buf(True), root=src)], [tensor],
                                [st.finish])

    def reduce(self, tensor, dst, op):
        root = self.rank() == dst
        st = Staged(tensor, write=root)
        mop, avg = reduce_op(op, st.arr.dtype)
        if root:
            def start():
                return [self.comm.Ireduce(mpi().IN_PLACE, st.buf(), mop, root=dst)]
            posts = ([lambda: divide_in_place(st.arr, self.size())] if avg else []) + \
                [st.finish]
        else:
            def start():
                return [self.comm.Ireduce(st.buf(), None, mop, root=dst)]
            posts = []
        return self._collective("reduce", tensor.numel(), start, [tensor], posts)

    def allgather_into(self, output, input):
        src = Staged(input, write=False)
        out = Staged(output, read=False)
        return self._collective(
            "all_gather", input.numel(),
            lambda: [self.comm.Iallgather(src.buf(True), out.buf(True))], [output],
            [out.finish])

    def reduce_scatter_into(self, output, input, op):
        src = Staged(input, write=False)
        out = Staged(output, read=False)
        mop, avg = reduce_op(op, out.arr.dtype)
        posts = ([lambda: divide_in_place(out.arr, self.size())] if avg else []) + [out.finish]
        return self._collective(
            "reduce_scatter", output.numel(),
            lambda: [self.comm.Ireduce_scatter_block(src.buf(), out.buf(), mop)], [output],
            posts)

    def gather_into(self, output, input, dst):
        src = Staged(input, write=False)
        out = Staged(output, read=False) if output is not None else None
        return self._collective(
            "gather", input.numel(),
            lambda: [self.comm.Igather(src.buf(True), out.buf(True) if out else None,
                                       root=dst)],
            [output] if output is not None else [], [out.finish] if out else [])

    def scatter_from(self, output, input, src):
        send = Staged(input, write=False) if input is not None else None
        out = Staged(output, read=False)
        return self._collective(
            "scatter", output.numel(),
            lambda: [self.comm.Iscatter(send.buf(True) if send else None, out.buf(True),
                                        root=src)], [output], [out.finish])

    def alltoall_into(self, output, input, output_splits, input_splits):
        src = Staged(input, write=False)
        out = Staged(output, read=False)
        isz = input.element_size()

        def spec(st, splits):
            counts = [n * isz for n in splits]
            displs = [0] * len(counts)
            for i in range(1, len(counts)):
                displs[i] = displs[i - 1] + counts[i - 1]
            return [st.arr.view("uint8"), (counts, displs), mpi().BYTE]
        return self._collective(
            "all_to_all", input.numel(),
            lambda: [self.comm.Ialltoallv(spec(src, input_splits), spec(out, output_splits))],
            [output], [out.finish])

    def barrier(self):
        return self._collective("barrier", 0, lambda: [self.comm.Ibarrier()], [], [])

    def monitored_barrier(self, timeout, wait_all_ranks):
        """Rank 0 hears from every rank within ``timeout``, then releases them; it names the
        ranks it did not hear from (all of them with ``wait_all_ranks``)."""
        self._check("monitored_barrier")
        self._seq += 1
        self.board.enter(self._seq, "monitored_barrier", 0)
        limit = timeout.total_seconds() if timeout is not None else self.timeout_s
        deadline = time.monotonic() + limit
        me, n = self.rank(), self.size()
        token = np.zeros(1, np.int64)
        if me == 0:
            inbox = {r: np.zeros(1, np.int64) for r in range(1, n)}
            reqs = {r: self.ctl.Irecv(inbox[r], source=r, tag=_MONITOR_TAG)
                    for r in range(1, n)}
            late = []
            for r, req in reqs.items():
                if not poll(req, deadline, "monitored_barrier"):
                    late.append(self.context.global_ranks[r])
                    if not wait_all_ranks:
                        break
            if late:
                ms = int(limit * 1000)
                which = (f"Ranks {', '.join(map(str, late))}" if wait_all_ranks else
                         f"Rank {late[0]}")
                err = DistBackendError(f"[Rank 0]: {which} failed to pass monitoredBarrier in "
                                       f"{ms} ms (process group '{self.group_name}')")
                self.abort(err)
                raise err
            sends = [self.ctl.Isend(token, dest=r, tag=_MONITOR_TAG) for r in range(1, n)]
            for req in sends:
                if not poll(req, deadline, "monitored_barrier"):
                    break
        else:
            send = self.ctl.Isend(token, dest=0, tag=_MONITOR_TAG)
            release = self.ctl.Irecv(np.zeros(1, np.int64), source=0, tag=_MONITOR_TAG)
            if not (poll(send, deadline, "monitored_barrier") and
                    poll(release, deadline, "monitored_barrier")):
                err = DistBackendError(
                    f"[Rank {self.context.global_ranks[me]}]: monitored_barrier on process "
                    f"group '{self.group_name}' was not released by rank "
                    f"{self.context.global_ranks[0]} within {limit:g} s (rank 0 reports the "
                    f"ranks that did not arrive)")
                self.abort(err)
                raise err
        self._done(self._seq)
        return CompletedWork("monitored_barrier")

    def _check_tag(self, op, tag):
        ub = self.p2p.Get_attr(mpi().TAG_UB)
        if ub is not None and tag > ub:
            raise ValueError(f"{op}: tag {tag} is larger than this MPI's largest tag {ub}")

    def send(self, tensor, dst, tag):
        self._check("send")
        self._check_tag("send", tag)
        st = Staged(tensor, write=False)
        return self._start("send", 0, lambda: [self.p2p.Isend(st.buf(True), dest=dst,
                                                               tag=tag)], [tensor], [])

    def recv(self, tensor, src, tag):
        self._check("recv")
        self._check_tag("recv", tag)
        MPI = mpi()
        st = Staged(tensor, read=False)
        source = MPI.ANY_SOURCE if src is None else src
        return self._start("recv", 0, lambda: [self.p2p.Irecv(st.buf(True), source=source,
                                                               tag=tag)],
                           [tensor], [st.finish], status=MPI.Status())

    # -- failures --------------------------------------------------------------------------------
    def abort(self, err=None) -> None:
        if self._broken is None:
            self._broken = err or DistBackendError("aborted")

    def _fail(self, op, exc):
        err = DistBackendError(f"{op} on process group '{self.group_name}' failed in MPI on "
                               f"rank {self._me()}: {exc}")
        self.abort(err)
        return err

    def mpi_error(self, work, exc):
        return self._fail(work._op, exc)

    def _me(self):
        return self.context.global_ranks[self.rank()]

    def timed_out(self, work, raise_error=True):
        """``work`` reached the group's deadline: fail it with a report of where every rank is,
        and make the group unusable (its MPI state is unknown now)."""
        elapsed = time.monotonic() - work._start
        try:
            statuses = self.board.query() if not self._closed else None
        except Exception:  # noqa: BLE001 - the report degrades, the error still comes
            statuses = None
        err = DistBackendError(self._describe_timeout(work, elapsed, statuses))
        work._complete(err)
        if work._exc is not err:      # it completed after all, just now
            return
        self.abort(err)
        if raise_error:
            raise err

    def _describe_timeout(self, work, elapsed, statuses) -> str:
        ranks = self.context.global_ranks
        head = (f"ember.distributed: {work._op} timed out on rank {self._me()} after "
                f"{elapsed:.2f} s (timeout {self.timeout_s:g} s)")
        where = (f"process group '{self.group_name}' (backend mpi, {self.size()} ranks: "
                 f"{_ranks_text(ranks)})")
        if work._seq == 0:
            lines = [f"{head}: a point-to-point {work._op} on {where} found no partner."]
        else:
            lines = [f"{head}: collective #{work._seq} of {where}."]
        if statuses is None:
            lines.append("The other ranks' state could not be read.")
            return "\n".join(lines)
        missing, silent, entered, details = [], [], [], []
        for r, st in enumerate(statuses):
            g = ranks[r]
            if st is None:
                silent.append(g)
                continue
            stale = st["heartbeat_age"] > 2.0   # beats come every 0.5 s
            alive = (f"last heartbeat {st['heartbeat_age']:.1f} s ago" +
                     (" (its process may be dead or hung)" if stale else ""))
            if work._seq and st["entered"] < work._seq:
                missing.append(g)
                state = "finished" if st["finished"] >= st["entered"] else "still in"
                details.append(f"  rank {g}: {state} collective #{st['entered']} "
                               f"({st['op']}); {alive}")
            else:
                entered.append((g, st))
                if not work._seq and r != self.rank():
                    details.append(f"  rank {g}: at collective #{st['entered']} ({st['op']}); "
                                   f"{alive}")
        if work._seq:
            if missing:
                lines.append(f"Missing ranks (never entered it): {missing}.")
            else:
                lines.append("Every rank entered it: check that all ranks called the same "
                             "collective with the same shapes, dtypes and roots.")
                counts = {g: st["count"] for g, st in entered if st["entered"] == work._seq}
                if work._op in ("all_reduce", "broadcast", "reduce", "all_gather",
                                "reduce_scatter") and len(set(counts.values())) > 1:
                    lines.append("The ranks passed different element counts: " +
                                 ", ".join(f"rank {g}: {c}" for g, c in counts.items()) + ".")
        if silent:
            lines.append(f"No answer from ranks {silent} (dead, or their MPI is stuck).")
        lines.extend(details)
        lines.append("The group can't be used any more; a launcher (ember-run) ends the job "
                     "when this error is not caught.")
        return "\n".join(lines)

    # -- life cycle ------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Free the communicators and the status window if every member is here to do it
        (both are collective); a broken group only forgets them."""
        if self._closed:
            return
        self._closed = True
        if self in _groups:
            _groups.remove(self)
        if self._broken is not None:
            return
        deadline = time.monotonic() + min(self.timeout_s, 60.0)
        req = self.ctl.Ibarrier()
        if not poll(req, deadline, "shutdown"):
            return
        self.board.close()
        self.ctl.Free()
        self.p2p.Free()
        self.comm.Free()


def shutdown_all() -> None:
    for g in reversed(list(_groups)):
        try:
            g.shutdown()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass
