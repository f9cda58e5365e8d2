"""The collectives with PyTorch's signatures (``torch.distributed.all_reduce`` & co).

Each function checks its arguments (errors name the function, the shapes, dtypes and ranks),
maps PyTorch's list forms onto the flat primitives of :class:`ProcessGroupBackend` (through one
contiguous temporary, copied out when the transfer is done) and either waits (the default) or
returns the :class:`Work` (``async_op=True``). Ranks named ``src``/``dst`` are global ranks;
``group_src``/``group_dst`` are ranks within ``group``.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from ._types import ReduceOp, RedOpType, as_red_op
from .process_group import GroupMember, _timeout_arg, resolve_group
from .work import CompletedWork
from ..dispatch.grad_mode import no_grad
from ..ops.factories import empty
from ..ops.shape import cat
from .._warn import user_stacklevel

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
           "all_to_all_single", "barrier", "monitored_barrier", "send", "recv", "isend",
           "irecv", "P2POp", "batch_isend_irecv"]


# -- argument checks -----------------------------------------------------------------------------
def _tensor(t, fn, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor but got {type(t)} instead. ({fn})")
    if not t.is_contiguous():
        raise ValueError(f"Tensors must be contiguous ({fn}: `{name}` has shape "
                         f"{tuple(t.shape)} and strides {t.stride()})")
    if t.device.type == "meta":
        raise RuntimeError(f"{fn}: `{name}` is a meta tensor, which holds no values to "
                           f"communicate")
    return t


def _tensor_list(ts, fn, name):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor] but got {type(ts)} instead. ({fn})")
    for i, t in enumerate(ts):
        _tensor(t, fn, f"{name}[{i}]")
    return list(ts)


def _one_per_rank(ts, pg, fn, name):
    if len(ts) != pg.size():
        raise ValueError(f"{fn}: {name} has {len(ts)} tensors but the group has {pg.size()} "
                         f"ranks")


def _same_kind(ts, ref, fn, name, shape=True):
    for i, t in enumerate(ts):
        if t.dtype is not ref.dtype or t.device is not ref.device:
            raise ValueError(f"{fn}: {name}[{i}] is {t.dtype} on {t.device}, but the input is "
                             f"{ref.dtype} on {ref.device}; they must match")
        if shape and t.numel() != ref.numel():
            raise ValueError(f"{fn}: {name}[{i}] has shape {tuple(t.shape)} ({t.numel()} "
                             f"elements) but the input has shape {tuple(ref.shape)} "
                             f"({ref.numel()}); every rank's block must have the same size")


def _op(op, t, fn):
    op = as_red_op(op, fn)
    if op == RedOpType.PREMUL_SUM:
        raise ValueError(f"{fn}: ReduceOp.PREMUL_SUM is not supported; scale the tensor and "
                         f"use ReduceOp.SUM")
    if t.is_complex() and op not in (RedOpType.SUM, RedOpType.AVG):
        raise ValueError(f"{fn} does not support ReduceOp.{op.name} on complex tensors")
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and \
            (t.is_floating_point() or t.is_complex()):
        raise ValueError(f"{fn}: ReduceOp.{op.name} needs an integer or bool tensor, got "
                         f"{t.dtype}")
    if op == RedOpType.AVG and not (t.is_floating_point() or t.is_complex()):
        raise ValueError(f"{fn}: ReduceOp.AVG needs a floating point or complex tensor, got "
                         f"{t.dtype}; use ReduceOp.SUM and divide")
    return op


def _group_rank(pg, global_rank, group_rank, fn, what):
    """The group rank of a src/dst given either as a global rank or as ``group_<what>``."""
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"{fn}: pass either {what} or group_{what}, not both")
    if group_rank is not None:
        if isinstance(group_rank, bool) or not isinstance(group_rank, int) or \
                not 0 <= group_rank < pg.size():
            raise ValueError(f"{fn}: group_{what}={group_rank!r} is not a rank of a group of "
                             f"size {pg.size()}")
        return group_rank
    if global_rank is None:
        global_rank = 0
    if isinstance(global_rank, bool) or not isinstance(global_rank, int):
        raise TypeError(f"{fn}: {what} must be an int rank, got {global_rank!r}")
    if global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.group_name} "
                         f"({fn}: {what})")
    return pg._ranks.index(global_rank)


def _skip(group, fn) -> bool:
    if group is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {fn} on a rank which does not belong to the given group.",
                      stacklevel=user_stacklevel())
        return True
    return False


def _impl(pg, t, fn):
    impl = pg._get_backend(t.device)
    return _Calling(impl, fn)


class _Calling:
    """Calls one backend primitive, turning a missing one into an error naming both."""

    __slots__ = ("impl", "fn")

    def __init__(self, impl, fn):
        self.impl, self.fn = impl, fn

    def __call__(self, method, *args):
        try:
            return getattr(self.impl, method)(*args)
        except NotImplementedError:
            raise RuntimeError(f"{self.fn}: process-group backend '{self.impl.name}' does not "
                               f"implement {method}") from None


def _finish(work, async_op):
    if async_op:
        watch = getattr(work, "_watch", None)
        if watch is not None:
            watch()
        return work
    work.wait()
    return None


def _copy_out(dst_list, flat, sizes):
    """A post step: copy consecutive blocks of ``flat`` into the tensors of ``dst_list``."""
    def run():
        with no_grad():
            start = 0
            for t, n in zip(dst_list, sizes):
                t.copy_(flat[start:start + n].view(tuple(t.shape)))
                start += n
    return run


def _flat_cat(ts):
    with no_grad():
        return cat([t.detach().reshape(-1) for t in ts]) if ts else None


def _empty(n, like):
    return empty(n, dtype=like.dtype, device=like.device)


# -- collectives ---------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the group, in place on every rank."""
    fn = "all_reduce"
    _tensor(tensor, fn)
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    op = _op(op, tensor, fn)
    return _finish(_impl(pg, tensor, fn)("allreduce", tensor, op), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``src``'s ``tensor`` into every rank's ``tensor``."""
    fn = "broadcast"
    _tensor(tensor, fn)
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    root = _group_rank(pg, src, group_src, fn, "src")
    return _finish(_impl(pg, tensor, fn)("broadcast", tensor, root), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across the group into ``dst``'s ``tensor``."""
    fn = "reduce"
    _tensor(tensor, fn)
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    op = _op(op, tensor, fn)
    root = _group_rank(pg, dst, group_dst, fn, "dst")
    return _finish(_impl(pg, tensor, fn)("reduce", tensor, root, op), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[i]`` = rank i's ``tensor``, on every rank."""
    fn = "all_gather"
    _tensor(tensor, fn)
    tensor_list = _tensor_list(tensor_list, fn, "tensor_list")
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    _one_per_rank(tensor_list, pg, fn, "tensor_list")
    _same_kind(tensor_list, tensor, fn, "tensor_list")
    n = tensor.numel()
    flat = _empty(n * pg.size(), tensor)
    work = _impl(pg, tensor, fn)("allgather_into", flat, tensor)
    work._add_post(_copy_out(tensor_list, flat, [n] * pg.size()))
    work._outputs = tensor_list
    return _finish(work, async_op)


def _check_world_multiple(fn, pg, whole, whole_name, block, block_name):
    """``whole`` holds one ``block`` per rank of the group."""
    if whole.numel() != block.numel() * pg.size():
        raise ValueError(f"{fn}: {whole_name} has {whole.numel()} elements, expected world size "
                         f"{pg.size()} x {block_name}'s {block.numel()} ({block_name} shape "
                         f"{tuple(block.shape)})")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` = every rank's ``input_tensor`` concatenated (dim 0) or stacked."""
    fn = "all_gather_into_tensor"
    _tensor(output_tensor, fn, "output_tensor")
    _tensor(input_tensor, fn, "input_tensor")
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    _same_kind([output_tensor], input_tensor, fn, "output_tensor", shape=False)
    _check_world_multiple(fn, pg, output_tensor, "output_tensor", input_tensor, "input_tensor")
    return _finish(_impl(pg, input_tensor, fn)("allgather_into", output_tensor, input_tensor),
                   async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` = the reduction over ranks of their ``input_list[rank]``."""
    fn = "reduce_scatter"
    _tensor(output, fn, "output")
    input_list = _tensor_list(input_list, fn, "input_list")
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    _one_per_rank(input_list, pg, fn, "input_list")
    _same_kind(input_list, output, fn, "input_list")
    op = _op(op, output, fn)
    return _finish(_impl(pg, output, fn)("reduce_scatter_into", output,
                                         _flat_cat(input_list), op), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` = block ``rank`` of the reduction over ranks of ``input``."""
    fn = "reduce_scatter_tensor"
    _tensor(output, fn, "output")
    _tensor(input, fn, "input")
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    _same_kind([input], output, fn, "input", shape=False)
    _check_world_multiple(fn, pg, input, "input", output, "output")
    op = _op(op, output, fn)
    return _finish(_impl(pg, output, fn)("reduce_scatter_into", output, input, op), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """On ``dst``, ``gather_list[i]`` = rank i's ``tensor``."""
    fn = "gather"
    _tensor(tensor, fn)
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    root = _group_rank(pg, dst, group_dst, fn, "dst")
    if pg.rank() == root:
        gather_list = _tensor_list(gather_list if gather_list is not None else [], fn,
                                   "gather_list")
        if len(gather_list) != pg.size():
            raise ValueError(f"{fn}: gather_list on the destination rank must have one tensor "
                             f"per rank ({pg.size()}), got {len(gather_list)}")
        _same_kind(gather_list, tensor, fn, "gather_list")
        flat = _empty(tensor.numel() * pg.size(), tensor)
        work = _impl(pg, tensor, fn)("gather_into", flat, tensor, root)
        work._add_post(_copy_out(gather_list, flat, [tensor.numel()] * pg.size()))
        work._outputs = gather_list
    else:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on "
                             "non-destination ranks.")
        work = _impl(pg, tensor, fn)("gather_into", None, tensor, root)
    return _finish(work, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """``tensor`` = ``src``'s ``scatter_list[rank]``."""
    fn = "scatter"
    _tensor(tensor, fn)
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    root = _group_rank(pg, src, group_src, fn, "src")
    flat = None
    if pg.rank() == root:
        scatter_list = _tensor_list(scatter_list if scatter_list is not None else [], fn,
                                    "scatter_list")
        if len(scatter_list) != pg.size():
            raise ValueError(f"{fn}: scatter_list on the source rank must have one tensor per "
                             f"rank ({pg.size()}), got {len(scatter_list)}")
        _same_kind(scatter_list, tensor, fn, "scatter_list")
        flat = _flat_cat(scatter_list)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    return _finish(_impl(pg, tensor, fn)("scatter_from", tensor, flat, root), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank i sends ``input_tensor_list[j]`` to rank j, which receives it in
    ``output_tensor_list[i]``."""
    fn = "all_to_all"
    outs = _tensor_list(output_tensor_list, fn, "output_tensor_list")
    ins = _tensor_list(input_tensor_list, fn, "input_tensor_list")
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    _one_per_rank(outs, pg, fn, "output_tensor_list")
    _one_per_rank(ins, pg, fn, "input_tensor_list")
    ref = ins[0]
    _same_kind(ins + outs, ref, fn, "tensors", shape=False)
    out_sizes = [t.numel() for t in outs]
    flat_out = _empty(sum(out_sizes), ref)
    work = _impl(pg, ref, fn)("alltoall_into", flat_out, _flat_cat(ins), out_sizes,
                              [t.numel() for t in ins])
    work._add_post(_copy_out(outs, flat_out, out_sizes))
    work._outputs = outs
    return _finish(work, async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes`` rows) and send piece j
    to rank j; ``output`` receives the pieces in rank order."""
    fn = "all_to_all_single"
    _tensor(output, fn, "output")
    _tensor(input, fn, "input")
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    _same_kind([output], input, fn, "output", shape=False)
    n = pg.size()

    def splits(t, sizes, name):
        rows = t.shape[0] if t.dim() else 1
        row = t.numel() // rows if rows else 0
        if sizes is None or len(sizes) == 0:
            if rows % n:
                raise ValueError(f"{fn}: {name} has {rows} rows along dim 0, which can't be "
                                 f"split evenly over {n} ranks; pass {name}_split_sizes")
            return [rows // n * row] * n
        sizes = [int(s) for s in sizes]
        if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != rows:
            raise ValueError(f"{fn}: {name}_split_sizes {sizes} must have {n} non-negative "
                             f"entries summing to {name}'s {rows} rows")
        return [s * row for s in sizes]
    out_splits = splits(output, output_split_sizes, "output")
    in_splits = splits(input, input_split_sizes, "input")
    return _finish(_impl(pg, input, fn)("alltoall_into", output, input, out_splits, in_splits),
                   async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier (times out like every
    collective, naming the ranks that did not arrive)."""
    fn = "barrier"
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    # a host-side synchronization: every group has an MPI instance
    return _finish(_Calling(pg._mpi(), fn)("barrier"), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier where rank 0 reports which ranks did not arrive within ``timeout``."""
    fn = "monitored_barrier"
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    timeout = _timeout_arg(timeout or pg._timeout, fn)
    _Calling(pg._mpi(), fn)("monitored_barrier", timeout, bool(wait_all_ranks)).wait()
    return None


# -- point to point ------------------------------------------------------------------------------
def _p2p(tensor, peer, group, tag, group_peer, fn, what, method):
    _tensor(tensor, fn)
    if isinstance(tag, bool) or not isinstance(tag, int) or tag < 0:
        raise ValueError(f"{fn}: tag must be a non-negative int, got {tag!r}")
    if _skip(group, fn):
        return None
    pg = resolve_group(group, fn)
    if what == "src" and peer is None and group_peer is None:
        other = None
    else:
        other = _group_rank(pg, peer, group_peer, fn, what)
        if other == pg.rank():
            raise ValueError(f"Invalid {what} rank: {what} must not be the same as the rank of "
                             f"the current process ({fn})")
    return _impl(pg, tensor, fn)(method, tensor, other, tag), pg


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to ``dst`` asynchronously; returns a Work."""
    got = _p2p(tensor, dst, group, tag, group_dst, "isend", "dst", "send")
    return None if got is None else _finish(got[0], True)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from ``src`` (None: any rank) asynchronously."""
    got = _p2p(tensor, src, group, tag, group_src, "irecv", "src", "recv")
    return None if got is None else _finish(got[0], True)


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    got = _p2p(tensor, dst, group, tag, group_dst, "send", "dst", "send")
    if got is not None:
        got[0].wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor``; returns the sender's global rank (-1 off the group)."""
    got = _p2p(tensor, src, group, tag, group_src, "recv", "src", "recv")
    if got is None:
        return -1
    work, pg = got
    work.wait()
    if src is None and group_src is None:
        return pg._ranks[work.source_rank()]
    return src if src is not None else pg._ranks[group_src]


class P2POp:
    """One send/recv for ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed."
                             "isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every send/recv of the list; returns their Works."""
    if not isinstance(p2p_op_list, (list, tuple)) or \
            not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return [w if w is not None else CompletedWork("p2p") for w in works]
