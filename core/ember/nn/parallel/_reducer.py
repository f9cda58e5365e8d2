"""DDP's reducer: gradient buckets all-reduced while the backward pass is still running.

Parameters are grouped into flat buckets (one dtype/device each, filled in reverse registration
order — the order gradients usually arrive — with a small first bucket, then ``bucket_cap_mb``).
A post-accumulate-grad hook on every parameter copies its gradient (pre-divided by the world size)
into its bucket view; when a bucket is complete, and every earlier bucket was launched, the bucket
goes out as an asynchronous all-reduce (or through the registered communication hook). Buckets
launch in index order on every rank, which MPI needs (collectives match by issue order). The
communication thread moves the data while autograd computes the remaining gradients; a callback
queued on the autograd engine waits for every bucket at the end of the backward pass and writes
the averaged gradients back into ``.grad`` (or leaves them in place with
``gradient_as_bucket_view``).

After the first synchronized iteration the buckets are rebuilt in the order gradients actually
arrived (rank 0's order, broadcast so every rank agrees). ``find_unused_parameters`` walks the
autograd graph from the outputs to mark unreachable parameters ready at once and all-reduces a
"used" map so globally unused parameters keep their ``.grad``; ``static_graph`` learns, in its
first iteration (reduced at the end of backward), which parameters are unused and how many
times each one's hook fires, and reuses that afterwards.
"""
from __future__ import annotations

import numpy as np

from ...autograd import engine
from ...dispatch.grad_mode import no_grad
from ...autograd.graph import AccumulateGrad
from ...autograd.record import gradient_edge
from ... import _dtype, distributed as dist
from ...futures import Future
from ...ops.factories import tensor, zeros, zeros_like

_FIRST_BUCKET_BYTES = 1024 * 1024   # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


class GradBucket:
    """One bucket of gradients as a communication hook sees it
    (``torch.distributed.GradBucket``)."""

    def __init__(self, index, buffer, params, views, is_last):
        self._index, self._buffer, self._params = index, buffer, params
        self._views, self._is_last = views, is_last

    def index(self) -> int:
        return self._index

    def buffer(self):
        """The flat tensor holding this bucket's gradients (already divided by the world size
        only when no communication hook is registered)."""
        return self._buffer

    def set_buffer(self, tensor) -> None:
        self._buffer = tensor

    def gradients(self) -> list:
        return list(self._views)

    def parameters(self) -> list:
        return list(self._params)

    def is_last(self) -> bool:
        return self._is_last


class _Bucket:
    __slots__ = ("indices", "buffer", "views", "offsets", "pending", "future")

    def __init__(self, indices, params):
        first = params[indices[0]]
        sizes = [params[i].numel() for i in indices]
        self.indices = list(indices)
        self.buffer = zeros(sum(sizes), dtype=first.dtype, device=first.device)
        self.offsets = list(np.cumsum([0] + sizes[:-1]))
        self.views = [self.buffer[o:o + n].view(tuple(params[i].shape))
                      for o, n, i in zip(self.offsets, sizes, self.indices)]
        self.pending = len(indices)
        self.future = None


def assign_buckets(params, order, limits) -> list:
    """Lists of parameter indices: ``order`` cut into buckets of at most ``limits[k]`` bytes
    (the k-th bucket of each dtype/device), one dtype and device per bucket."""
    done, open_ = [], {}
    for i in order:
        p = params[i]
        key = (p.dtype, p.device)
        cur = open_.get(key)
        if cur is None:
            cur = open_[key] = [[], 0, 0]
        cur[0].append(i)
        cur[1] += p.numel() * p.element_size()
        if cur[1] >= limits[min(cur[2], len(limits) - 1)]:
            done.append(cur[0])
            open_[key] = [[], 0, cur[2] + 1]
    done.extend(cur[0] for cur in open_.values() if cur[0])
    position = {i: k for k, i in enumerate(order)}
    return sorted(done, key=lambda b: position[b[0]])


def _grad_views_alias(g, view) -> bool:
    return g is not None and g._storage is view._storage and g._offset == view._offset and \
        g._shape == view._shape and g._stride == view._stride


class Reducer:
    def __init__(self, params, names, process_group, bucket_cap_bytes, find_unused,
                 gradient_as_bucket_view, static_graph):
        self.params = params
        self.names = names
        self.pg = process_group
        # a cap below the usual 1 MiB first bucket applies to the first bucket too
        self.limits = [min(_FIRST_BUCKET_BYTES, bucket_cap_bytes), bucket_cap_bytes]
        self.find_unused = find_unused
        self.as_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.comm_hook = None
        self.comm_state = None
        self.sync_iterations = 0        # forwards that prepared a synchronized backward
        self.expect_hooks = False
        self.require_finalize = False
        self.has_marked_unused = False
        self.ready = set()
        self.unused = []
        self.next_bucket = 0
        self.local_used = np.zeros(len(params), dtype=np.int32)
        self.global_used = None         # all-reduced local_used (None: not reduced yet)
        self.used_work = None
        self.hook_counts = [0] * len(params)    # static graph: hooks per param, 1st iteration
        self.hook_left = []
        self.delay_queued = False
        self.rebuilt_order = []
        self.has_rebuilt = False
        self.div_factor = None
        self.join_work = None           # forward-pass all-reduce of the non-joined count
        self.divide_by_initial_world_size = True
        self._build(assign_buckets(params, list(reversed(range(len(params)))), self.limits))
        self.handles = [p.register_post_accumulate_grad_hook(self._hook_for(i))
                        for i, p in enumerate(params)]

    # -- buckets ---------------------------------------------------------------------------------
    def _build(self, assignment) -> None:
        self.buckets = [_Bucket(b, self.params) for b in assignment]
        self.locator = {}
        for bi, b in enumerate(self.buckets):
            for pos, i in enumerate(b.indices):
                self.locator[i] = (bi, pos)
        if self.as_view:
            with no_grad():
                for b in self.buckets:
                    for view, i in zip(b.views, b.indices):
                        p = self.params[i]
                        if p.grad is not None:
                            view.copy_(p.grad)
                            p.grad = view

    def bucket_indices(self) -> list:
        return [list(b.indices) for b in self.buckets]

    def should_rebuild(self) -> bool:
        return (self.static_graph or not self.find_unused) and not self.has_rebuilt

    def push_rebuilt(self, index) -> None:
        if self.should_rebuild() and index not in self.rebuilt_order:
            self.rebuilt_order.append(index)

    def push_all_rebuilt(self) -> None:
        """A rank that joined early has seen no gradient order: use the default one (a static
        graph's training ranks record theirs in the second iteration, so not before)."""
        if self.static_graph and self.sync_iterations <= 1:
            return
        if self.should_rebuild() and len(self.rebuilt_order) < len(self.params):
            self.rebuilt_order = list(reversed(range(len(self.params))))

    def rebuild_buckets(self) -> bool:
        """Once, after the first synchronized iteration: buckets in the order gradients
        arrived on rank 0 (a broadcast every rank takes part in). True if rebuilt."""
        if not self.should_rebuild() or len(self.rebuilt_order) < len(self.params):
            return False
        order = tensor(self.rebuilt_order, dtype=_int64())
        dist.broadcast(order, group_src=0, group=self.pg)
        self.has_rebuilt = True
        self.rebuilt_order = []
        self._build(assign_buckets(self.params, [int(i) for i in order.tolist()], self.limits))
        return True

    # -- per iteration ---------------------------------------------------------------------------
    def prepare_for_forward(self) -> None:
        if self.require_finalize:
            raise RuntimeError(self._unfinished_message())
        self.sync_iterations += 1

    def prepare_for_backward(self, outputs) -> None:
        self.expect_hooks = True
        self.next_bucket = 0
        self.ready = set()
        self.has_marked_unused = False
        self.delay_queued = False
        for b in self.buckets:
            b.pending = len(b.indices)
            b.future = None
        if self.static_graph and self.sync_iterations > 1:
            self.hook_left = list(self.hook_counts)
        if self.find_unused and not self.static_graph:
            self.unused = self._search_unused(outputs)

    def _search_unused(self, outputs) -> list:
        seen, stack, reached = set(), [], set()
        for t in outputs:
            e = gradient_edge(t)
            if e is not None and e[0] not in seen:
                seen.add(e[0])
                stack.append(e[0])
        while stack:
            n = stack.pop()
            if n.__class__ is AccumulateGrad:
                reached.add(id(n.variable))
            for e in n.next_edges:
                if e is not None and e[0] not in seen:
                    seen.add(e[0])
                    stack.append(e[0])
        return [i for i, p in enumerate(self.params) if id(p) not in reached]

    def _static_first(self) -> bool:
        return self.static_graph and self.sync_iterations == 1

    def _hook_for(self, index):
        def hook(_param):
            self._on_grad(index)
        return hook

    def _on_grad(self, index) -> None:
        if not self.expect_hooks:
            return  # no_sync() or outside a prepared backward: plain local accumulation
        if (self.find_unused and not self.static_graph) or self._static_first():
            self.local_used[index] = 1
        if self._static_first():
            self.hook_counts[index] += 1
            if not self.delay_queued:
                self.delay_queued = True
                engine.queue_callback(self._delay_all_reduce)
            return
        if not self.has_marked_unused:
            self.has_marked_unused = True
            for u in self.unused:
                self._mark_ready(u)
        if self.static_graph:
            if self.hook_left[index] <= 0:
                raise RuntimeError("Your training graph has changed in this iteration, e.g., one "
                                   "parameter is unused in first iteration, but then got used in "
                                   f"the second iteration (parameter {self.names[index]}). this "
                                   "is not compatible with static_graph set to True.")
            self.hook_left[index] -= 1
            if self.hook_left[index] > 0:
                return
        self.push_rebuilt(index)
        self._mark_ready(index)

    def _divisor(self) -> int:
        if self.div_factor is None:
            self.div_factor = self.pg.size()
            if self.join_work is not None and not self.divide_by_initial_world_size:
                self.join_work.wait()
                self.div_factor = int(self.join_work.result()[0].item())
            self.join_work = None
        return self.div_factor

    def _copy_in(self, index) -> None:
        """Put parameter ``index``'s gradient into its bucket view (divided by the world size
        when the default all-reduce will sum it)."""
        b = self.buckets[self.locator[index][0]]
        view = b.views[self.locator[index][1]]
        p = self.params[index]
        g = p.grad
        divide = self.comm_hook is None
        with no_grad():
            if g is None:
                view.zero_()
            elif self.as_view:
                if not _grad_views_alias(g, view):
                    view.copy_(g)
                    p.grad = view
                if divide:
                    view.div_(self._divisor())
            elif divide:
                view.copy_(g)
                view.div_(self._divisor())
            else:
                view.copy_(g)

    def _mark_ready(self, index) -> None:
        if index in self.ready:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of the "
                "following reasons: 1) Use of a module parameter outside the `forward` function. "
                "2) Reused parameters in multiple reentrant backward passes (e.g. several "
                "`checkpoint` calls over the same part of the model); try static_graph=True if "
                "the graph does not change between iterations. 3) Incorrect unused parameter "
                f"detection.\nParameter at index {index} with name {self.names[index]} has been "
                f"marked as ready twice.")
        self.ready.add(index)
        self.require_finalize = True
        self._copy_in(index)
        bi = self.locator[index][0]
        b = self.buckets[bi]
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready(bi)
        if self.next_bucket == len(self.buckets):
            if self.find_unused and not self.static_graph:
                self._reduce_used_map()
            engine.queue_callback(self.finalize)

    def _launch_ready(self, bucket_index) -> None:
        if bucket_index > self.next_bucket:
            return   # an earlier bucket is not complete yet: ranks must launch in order
        while self.next_bucket < len(self.buckets) and \
                self.buckets[self.next_bucket].pending == 0:
            self._launch(self.next_bucket)
            self.next_bucket += 1

    def _launch(self, bi, buffer=None) -> None:
        b = self.buckets[bi]
        gb = GradBucket(bi, b.buffer if buffer is None else buffer,
                        [self.params[i] for i in b.indices], b.views,
                        bi == len(self.buckets) - 1)
        if self.comm_hook is None:
            work = dist.all_reduce(gb.buffer(), group=self.pg, async_op=True)
            b.future = work.get_future()
        else:
            fut = self.comm_hook(self.comm_state, gb)
            if not isinstance(fut, Future):
                raise RuntimeError(f"a DDP communication hook must return an "
                                   f"ember.futures.Future (torch.futures.Future), got "
                                   f"{type(fut).__name__}")
            b.future = fut

    def _reduce_used_map(self) -> None:
        dev = self.params[0].device
        used = tensor(self.local_used.copy(), device=dev)
        self.used_work = (dist.all_reduce(used, group=self.pg, async_op=True), used)

    def _wait_used_map(self) -> None:
        if self.global_used is None and self.used_work is not None:
            work, used = self.used_work
            work.wait()
            self.global_used = used.cpu().numpy().copy()
            self.used_work = None

    def _globally_used(self, index) -> bool:
        if self.local_used[index]:
            return True
        self._wait_used_map()   # only a locally unused parameter waits for the map
        return self.global_used is None or bool(self.global_used[index])

    # -- end of backward -------------------------------------------------------------------------
    def _delay_all_reduce(self) -> None:
        """Static graph, first iteration: everything is reduced once backward is over."""
        self.unused = [i for i, c in enumerate(self.hook_counts) if c == 0]
        for i in range(len(self.params)):
            self._copy_in(i)
            self.ready.add(i)
        self.require_finalize = True
        for bi in range(len(self.buckets)):
            self.buckets[bi].pending = 0
            self._launch(bi)
        self.next_bucket = len(self.buckets)
        self._reduce_used_map()
        self.finalize()

    def finalize(self) -> None:
        self.expect_hooks = False
        self.require_finalize = False
        track_unused = self.find_unused or self.static_graph
        if self.static_graph and self.sync_iterations > 1 and self.should_rebuild():
            for u in self.unused:
                self.push_rebuilt(u)
        for b in self.buckets:
            value = b.future.wait()
            out = value[0] if isinstance(value, (list, tuple)) else value
            out_flat = out.reshape(-1)
            if out_flat.numel() != b.buffer.numel():
                raise RuntimeError(f"DDP communication hook returned a tensor of "
                                   f"{out_flat.numel()} elements for a bucket of "
                                   f"{b.buffer.numel()}")
            self._write_back(b, out_flat, track_unused)
        self.div_factor = None
        if self.find_unused and not self.static_graph:
            if self.used_work is not None:
                self.used_work[0].wait()
                self.used_work = None
            self.local_used[:] = 0
            self.global_used = None
        elif self._static_first():
            self._wait_used_map()       # kept: the graph is static

    def _write_back(self, b, out_flat, track_unused) -> None:
        same = out_flat._storage is b.buffer._storage and out_flat._offset == b.buffer._offset
        with no_grad():
            for pos, i in enumerate(b.indices):
                p = self.params[i]
                if track_unused and not self._globally_used(i):
                    continue    # globally unused: its .grad stays as it was
                view = b.views[pos]
                src = view if same else out_flat[b.offsets[pos]:b.offsets[pos] +
                                                 view.numel()].view(tuple(view.shape))
                if self.as_view:
                    if src is not view:
                        view.copy_(src)
                    if p.grad is None:
                        p.grad = view
                    elif not _grad_views_alias(p.grad, view):
                        raise RuntimeError("Detected at least one parameter gradient is not the "
                                           "expected DDP bucket view with "
                                           "gradient_as_bucket_view=True (parameter "
                                           f"{self.names[i]}).")
                elif p.grad is None:
                    p.grad = src.clone()
                else:
                    p.grad.copy_(src)

    # -- join: shadowing the collectives of the ranks still training -----------------------------
    def match_backward_collectives(self) -> None:
        """A joined rank: the same all-reduces a training rank's backward issues, on zeros."""
        first_static = self._static_first()
        for bi, b in enumerate(self.buckets):
            self._launch(bi, zeros_like(b.buffer))
        for b in self.buckets:
            b.future.wait()
            b.future = None
        if (self.find_unused and not self.static_graph) or first_static:
            saved = self.local_used.copy()
            self.local_used[:] = 0
            self._reduce_used_map()
            self.used_work[0].wait()
            if first_static:
                self.global_used = self.used_work[1].cpu().numpy().copy()
            self.used_work = None
            self.local_used[:] = saved

    def _unfinished_message(self) -> str:
        missing = [i for i in range(len(self.params)) if i not in self.ready]
        rank = self.pg.rank()
        return ("Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all "
                "`forward` function outputs participate in calculating loss. \nIf you already "
                "have done the above, then the distributed data parallel module wasn't able to "
                "locate the output tensors in the return value of your module's `forward` "
                "function. Please include the loss function and the structure of the return "
                "value of `forward` of your module when reporting this issue (e.g. list, dict, "
                "iterable).\nParameter indices which did not receive grad for rank "
                f"{rank}: {' '.join(map(str, missing))}\nParameters which did not receive "
                f"grad for rank {rank}: {', '.join(self.names[i] for i in missing)}")

    def remove_hooks(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []


def _int64():
    return _dtype.int64
