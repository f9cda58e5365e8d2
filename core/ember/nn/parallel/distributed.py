"""``DistributedDataParallel``: data parallelism across the ranks of a process group
(``torch.nn.parallel.DistributedDataParallel``).

Construction checks that every rank holds the same parameters and broadcasts rank 0's
parameters and buffers. Each forward may broadcast buffers (``broadcast_buffers``) and prepares
the reducer (``_reducer.py``), which averages gradients across ranks while backward runs.
``no_sync()`` skips the reduction (gradients accumulate locally until the next synchronized
backward); ``join()`` lets ranks with fewer batches finish early (``Join``).
"""
from __future__ import annotations

from contextlib import contextmanager

from ...dispatch.grad_mode import is_grad_enabled, no_grad
from ..._tensor import Tensor
from ..modules.module import Module
from ._reducer import Reducer
from ... import _dtype, distributed as dist
from ...distributed.algorithms.join import Join, _JoinConfig
from ...distributed.process_group import resolve_group
from ...ops.factories import ones, tensor, zeros
from ...ops.shape import cat

__all__ = ["DistributedDataParallel"]


def _find_tensors(obj):
    """The tensors in a forward output (nested lists/tuples/dicts/dataclasses)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _find_tensors(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in _find_tensors(x)]
    if hasattr(obj, "__dataclass_fields__"):
        return [t for name in obj.__dataclass_fields__ for t in
                _find_tensors(getattr(obj, name))]
    return []


def _coalesced_broadcast(tensors, src_group_rank, pg) -> None:
    """Broadcast ``tensors`` from one rank: one flat broadcast per dtype/device."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.dtype, t.device), []).append(t)
    with no_grad():
        for ts in groups.values():
            flat = cat([t.detach().reshape(-1) for t in ts])
            dist.broadcast(flat, group_src=src_group_rank, group=pg)
            start = 0
            for t in ts:
                n = t.numel()
                t.copy_(flat[start:start + n].view(tuple(t.shape)))
                start += n


class _DDPJoinHook:
    """What a DDP model does on a rank that has joined: shadow the collectives of one
    iteration of the ranks still training."""

    def __init__(self, ddp, divide_by_initial_world_size):
        self.ddp = ddp
        ddp.reducer.divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        ddp = self.ddp
        ddp.reducer.rebuild_buckets()
        if ddp._will_sync_buffers():
            ddp._sync_buffers(joined=True)
        work = ddp._check_global_requires_backward_grad_sync(is_joined_rank=True)
        work.wait()
        should_sync = work.result()[0].item() != 0
        ddp.require_forward_param_sync = should_sync
        if not should_sync:
            return
        ddp.reducer.sync_iterations += 1
        ddp.reducer.match_backward_collectives()
        ddp.reducer.push_all_rebuilt()

    def post_hook(self, is_last_joiner: bool) -> None:
        self.ddp._sync_final_model(is_last_joiner)


class DistributedDataParallel(Module):
    """Wrap ``module`` so that its gradients are averaged across the ranks of
    ``process_group`` (default: the world) during backward."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        for name, value in (("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce),
                            ("mixed_precision", mixed_precision), ("device_mesh", device_mesh)):
            if value is not None:
                raise ValueError(f"DistributedDataParallel: {name} is not supported by ember")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel expects an nn.Module, got "
                            f"{type(module).__name__}")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        devices = {p.device.type for _, p in named}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel's input module must be on the same type "
                             f"of devices, but input module parameters locate in "
                             f"{sorted(devices)}.")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if not bucket_cap_mb > 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.process_group = resolve_group(process_group, "DistributedDataParallel")
        self.device_ids = None if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim
        self.device = named[0][1].device
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = False
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._join_config = _JoinConfig.construct_disabled_join_config()
        self._comm_hook_set = False
        self._module_buffers = [b for _, b in module.named_buffers()]
        self._verify_same_model(named)
        if init_sync:
            _coalesced_broadcast([p for p in module.parameters()] + self._module_buffers, 0,
                                 self.process_group)
        self.reducer = Reducer([p for _, p in named], [n for n, _ in named], self.process_group,
                               self.bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view, False)
        if static_graph:
            self._set_static_graph()

    # -- construction helpers --------------------------------------------------------------------
    def _verify_same_model(self, named) -> None:
        pg = self.process_group
        mine = tensor([len(named), sum(p.numel() for _, p in named)], dtype=_int64())
        every = zeros(2 * pg.size(), dtype=_int64())
        dist.all_gather_into_tensor(every, mine, group=pg)
        rows = every.view(pg.size(), 2).tolist()
        for r, (count, numel) in enumerate(rows):
            if (count, numel) != tuple(rows[0]):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank "
                                   f"{pg._ranks[r]} has {count} params ({numel} elements), while "
                                   f"rank {pg._ranks[0]} has inconsistent {rows[0][0]} params "
                                   f"({rows[0][1]} elements).")

    def _set_static_graph(self) -> None:
        if self.static_graph:
            return
        if self.reducer.sync_iterations > 0:
            raise RuntimeError("static_graph must be set before the first iteration")
        self.static_graph = True
        self.reducer.static_graph = True

    # -- forward ---------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            self.reducer.prepare_for_forward()
        work = Join.notify_join_context(self)
        if work is not None:
            self.reducer.join_work = work
        if is_grad_enabled():
            self.reducer.rebuild_buckets()
        if self._will_sync_buffers():
            self._sync_buffers(joined=False)
        if self._join_config.enable:
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
        output = self.module(*inputs, **kwargs)
        if sync:
            self.require_forward_param_sync = True
            outputs = _find_tensors(output) if self.find_unused_parameters and \
                not self.static_graph else []
            self.reducer.prepare_for_backward(outputs)
        else:
            self.require_forward_param_sync = False
        return output

    def _will_sync_buffers(self) -> bool:
        return self.require_forward_param_sync and self.broadcast_buffers and \
            len(self._module_buffers) > 0

    def _find_common_rank(self, is_active) -> int:
        """The highest group rank still training (the authoritative copy of the model)."""
        pg = self.process_group
        t = tensor([pg.rank() if is_active else -1], dtype=_int64(), device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=pg)
        return int(t.item())

    def _sync_buffers(self, joined) -> None:
        src = self._find_common_rank(not joined) if self._join_config.enable else 0
        _coalesced_broadcast(self._module_buffers, src, self.process_group)

    def _check_global_requires_backward_grad_sync(self, is_joined_rank):
        make = ones if (not is_joined_rank and self.require_backward_grad_sync) else zeros
        flag = make(1, device=self.device)
        return dist.all_reduce(flag, group=self.process_group, async_op=True)

    def _sync_final_model(self, is_last_joiner) -> None:
        src = self._find_common_rank(is_last_joiner)
        _coalesced_broadcast(list(self.module.parameters()) + self._module_buffers, src,
                             self.process_group)

    # -- PyTorch's API ---------------------------------------------------------------------------
    @contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without communicating; the first
        synchronized backward afterwards reduces the accumulated sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """``with model.join():`` around the training loop lets ranks run different numbers of
        iterations (see ``ember.distributed.algorithms.Join``)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        divide = kwargs.get("divide_by_initial_world_size", True)
        return _DDPJoinHook(self, divide_by_initial_world_size=divide)

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def register_comm_hook(self, state, hook) -> None:
        """Replace the bucket all-reduce by ``hook(state, bucket) -> Future`` (see
        ``ember.distributed.algorithms.ddp_comm_hooks``). Once, before training."""
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got "
                            f"{type(hook).__name__}")
        if self._comm_hook_set:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        if self.reducer.sync_iterations > 0:
            raise RuntimeError("register_comm_hook must be called before the first forward "
                               "pass.")
        self._comm_hook_set = True
        self.reducer.comm_hook = hook
        self.reducer.comm_state = state

    def _get_ddp_logging_data(self) -> dict:
        return {"world_size": self.process_group.size(), "static_graph": self.static_graph,
                "bucket_cap_bytes": self.bucket_bytes_cap,
                "num_buckets": len(self.reducer.buckets),
                "find_unused_parameters": self.find_unused_parameters,
                "gradient_as_bucket_view": self.gradient_as_bucket_view}


def _int64():
    return _dtype.int64
