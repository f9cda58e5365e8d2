"""Process groups: ``init_process_group``, ``new_group``, ``destroy_process_group`` and the
rank/size queries (``torch.distributed``'s names and errors).

A :class:`ProcessGroup` is what users hold (``group.WORLD``, ``new_group(...)``): its ranks and
one backend instance per device type it serves (``"cpu:mpi,cuda:nccl"``). Membership always
comes from MPI (the launcher starts the ranks with mpiexec), so every group also has an MPI
backend instance: it runs the collectives for devices no other backend claims and is the
``bootstrap`` that plug-in backends use to exchange their setup data.
"""
from __future__ import annotations

import atexit
import logging
import os
import sys
from datetime import timedelta

from ._types import GroupMember, default_pg_timeout
from .backend import BackendContext, parse_backend_spec, registry

log = logging.getLogger("ember.distributed")

__all__ = ["ProcessGroup", "init_process_group", "destroy_process_group", "new_group",
           "is_initialized", "get_rank", "get_world_size", "get_backend",
           "get_process_group_ranks", "get_group_rank", "get_global_rank",
           "is_mpi_available", "is_nccl_available", "is_gloo_available",
           "is_backend_available", "is_torchelastic_launched"]


class ProcessGroup:
    """A set of ranks that run collectives together (``torch.distributed.ProcessGroup``)."""

    def __init__(self, group_name, global_ranks, rank, timeout, spec, impls, backend_str):
        self._group_name = group_name
        self._ranks = list(global_ranks)
        self._rank = rank
        self._timeout = timeout
        self._spec = spec          # device type ("*": any) -> backend name
        self._impls = impls        # backend name -> ProcessGroupBackend
        self._backend_str = backend_str

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        return self._backend_str

    @property
    def group_name(self) -> str:
        return self._group_name

    @property
    def bound_device_id(self):
        return None

    def _get_backend(self, device):
        """The backend instance serving ``device`` (a device or a device type)."""
        dtype = getattr(device, "type", None) or str(device).split(":")[0]
        name = self._spec.get(dtype) or self._spec.get("*")
        if name is None:
            served = ", ".join(sorted(d for d in self._spec if d != "*"))
            raise RuntimeError(f"No backend type associated with device type {dtype}: process "
                               f"group '{self._group_name}' was created with backend "
                               f"'{self._backend_str}', which serves {served}; add "
                               f"'{dtype}:mpi' to the backend string")
        return self._impls[name]

    def _mpi(self):
        return self._impls["mpi"]

    def __repr__(self):
        return (f"<ember.distributed.ProcessGroup '{self._group_name}' backend="
                f"'{self._backend_str}' rank={self._rank} size={self.size()}>")


class _World:
    def __init__(self):
        self.default = None
        self.groups = {}        # ProcessGroup -> None (insertion ordered)
        self.count = 0          # groups created so far (new_group's names and MPI tags)
        self.rank = -1
        self.size = -1
        self.spec_text = None
        self.exit_hooked = False


_world = _World()


def _not_initialized() -> RuntimeError:
    return RuntimeError("Default process group has not been initialized, please make sure to "
                        "call init_process_group.")


def _default():
    if _world.default is None:
        raise _not_initialized()
    return _world.default


def resolve_group(group, fn: str):
    """``group`` or the default group; raises for a rank outside ``group``."""
    if group is None or group is GroupMember.WORLD:
        return _default()
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError(f"{fn}: this rank is not a member of the group (new_group returned "
                         f"GroupMember.NON_GROUP_MEMBER here)")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{fn}: group must be a ProcessGroup or None, got "
                        f"{type(group).__name__}")
    if group not in _world.groups:
        raise ValueError(f"{fn}: process group '{group.group_name}' was destroyed or belongs to "
                         f"an earlier init_process_group")
    return group


def _timeout_arg(timeout, fn):
    if timeout is None:
        return default_pg_timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout).__name__} ({fn})")
    if timeout.total_seconds() <= 0:
        raise ValueError(f"{fn}: timeout must be positive, got {timeout}")
    return timeout


def _make_group(name, ranks, my_rank, timeout, spec, backend_str, pg_options, index):
    """Build the backend instances of a group on one of its members."""
    from .mpi import make_group as make_mpi  # start-up: ember.distributed.mpi (~20 ms)
    impls = {}
    base = BackendContext(group_name=name, rank=ranks.index(my_rank), size=len(ranks),
                          global_ranks=list(ranks), timeout=timeout, device_types=["*"],
                          options={"group_index": index, **(pg_options or {})})
    impls["mpi"] = make_mpi(base)
    bootstrap = ProcessGroup(name, ranks, base.rank, timeout, {"*": "mpi"},
                             {"mpi": impls["mpi"]}, "mpi")
    for backend_name in sorted(set(spec.values()) - {"mpi"}):
        factory, _ = registry.get(backend_name)
        ctx = BackendContext(group_name=name, rank=base.rank, size=base.size,
                             global_ranks=list(ranks), timeout=timeout,
                             device_types=[d for d, b in spec.items() if b == backend_name],
                             bootstrap=bootstrap, options=dict(base.options))
        impls[backend_name] = factory(ctx)
    return ProcessGroup(name, ranks, base.rank, timeout, spec, impls, backend_str)


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the job's default process group. The ranks are the processes the launcher started
    (``ember-run -n N script.py``, mpiexec underneath); ``rank``/``world_size`` and the RANK /
    WORLD_SIZE variables, when given, must agree with it. ``backend``: ``"mpi"`` (every device,
    host-staged), a plug-in's name (``"nccl"``), ``"cpu:mpi,cuda:nccl"``, or None (MPI plus the
    plug-ins registered as defaults for their devices). ``init_method`` is accepted for PyTorch
    compatibility: MPI needs no rendezvous address."""
    from .mpi.engine import env_rank_check, mpi  # start-up: ember.distributed.mpi (~20 ms)
    if _world.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("init_process_group: ember's process groups rendezvous through MPI "
                         "and take no store")
    if init_method is not None and not isinstance(init_method, str):
        raise TypeError(f"init_process_group: init_method must be a URL string, got "
                        f"{type(init_method).__name__}")
    timeout = _timeout_arg(timeout, "init_process_group")
    spec = parse_backend_spec(backend)
    MPI = mpi()
    world_rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    env_rank_check(world_rank, size)
    for arg, given, actual in (("rank", rank, world_rank), ("world_size", world_size, size)):
        if given is not None and given != -1 and given != actual:
            raise ValueError(f"init_process_group: {arg}={given} but this process is {arg} "
                             f"{actual} of the MPI job (start it with `ember-run -n N`)")
    backend_str = backend if isinstance(backend, str) else ",".join(
        f"{d}:{b}" for d, b in spec.items() if d != "*") or "mpi"
    if spec == {"*": "mpi"}:
        backend_str = "mpi"
    pg = _make_group(group_name or "default_pg", list(range(size)), world_rank, timeout, spec,
                     backend_str, pg_options, 0)
    _world.default = pg
    _world.groups = {pg: None}
    _world.rank, _world.size = world_rank, size
    GroupMember.WORLD = pg
    _install_exit_handlers(size)
    log.info("rank %d of %d joined the default process group (backend %s, timeout %s, "
             "engines %s)", world_rank, size, backend_str, timeout,
             ", ".join(f"{d}: {b}" for d, b in spec.items()))


def _install_exit_handlers(size):
    if _world.exit_hooked:
        return
    _world.exit_hooked = True
    atexit.register(_at_exit)
    if size > 1:
        previous = sys.excepthook

        def abort_job(tp, value, tb):
            # an uncaught error on one rank must end every rank now, not after the others'
            # timeouts: MPI_Abort makes mpiexec kill the job
            previous(tp, value, tb)
            _abort_world(1)
        sys.excepthook = abort_job


def _abort_world(code: int) -> None:
    from .mpi import engine  # start-up: ember.distributed.mpi (~20 ms)
    MPI = engine._MPI
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(code)


def _at_exit():
    # start-up: ember.distributed.mpi (~20 ms)
    from .mpi.group import shutdown_all
    from .mpi.progress import progress
    progress.stop()
    if _world.default is not None:
        shutdown_all()


def destroy_process_group(group=None) -> None:
    """Shut down ``group`` (None: every group, leaving the package uninitialized)."""
    whole = group is None or group is GroupMember.WORLD
    if whole:
        pg = _default()
        groups = list(_world.groups)
        _world.default = None
        _world.groups = {}
        _world.count = 0
        GroupMember.WORLD = None
    else:
        pg = resolve_group(group, "destroy_process_group")
        groups = [pg]
        _world.groups.pop(pg, None)
    for g in reversed(groups):
        for impl in g._impls.values():
            impl.shutdown()
    if whole:
        from .run import mark_finished  # start-up: ember.distributed.run (~12 ms)
        mark_finished()  # ember-run: this rank left the job properly


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """A group of some of the ranks. As in PyTorch, every rank of the default group calls it
    (in the same order), members or not; non-members get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default()
    timeout = _timeout_arg(timeout or world._timeout, "new_group")
    if ranks is None:
        ranks = list(range(_world.size))
    else:
        ranks = list(ranks)
        for r in ranks:
            if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < _world.size:
                raise ValueError(f"new_group: ranks must be ints in [0, {_world.size}), got "
                                 f"{r!r}")
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"new_group: ranks {ranks} has duplicates")
        if not ranks:
            raise ValueError("new_group: ranks must not be empty")
        ranks = sorted(ranks)
    spec = world._spec if backend is None else parse_backend_spec(backend)
    backend_str = world._backend_str if backend is None else str(backend)
    # every rank passes here before any MPI call that would block among the members
    world._mpi().barrier().wait()
    _world.count += 1
    index = _world.count
    if _world.rank not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    pg = _make_group(str(index), ranks, _world.rank, timeout, spec, backend_str, pg_options,
                     index)
    _world.groups[pg] = None
    return pg


def is_initialized() -> bool:
    return _world.default is not None


def get_rank(group=None) -> int:
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve_group(group, "get_rank").rank()


def get_world_size(group=None) -> int:
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve_group(group, "get_world_size").size()


def get_backend(group=None) -> str:
    return resolve_group(group, "get_backend").name()


def get_process_group_ranks(group) -> list:
    return list(resolve_group(group, "get_process_group_ranks")._ranks)


def get_group_rank(group, global_rank: int) -> int:
    pg = resolve_group(group, "get_group_rank")
    if global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.group_name}")
    return pg._ranks.index(global_rank)


def get_global_rank(group, group_rank: int) -> int:
    pg = resolve_group(group, "get_global_rank")
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.group_name}")
    return pg._ranks[group_rank]


def is_mpi_available() -> bool:
    from .mpi import is_available  # start-up: ember.distributed.mpi (~20 ms)
    return is_available()


def is_backend_available(backend: str) -> bool:
    try:
        registry.get(str(backend).lower())
    except RuntimeError:
        return False
    return backend.lower() != "mpi" or is_mpi_available()


def is_nccl_available() -> bool:
    return is_backend_available("nccl")


def is_gloo_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None
