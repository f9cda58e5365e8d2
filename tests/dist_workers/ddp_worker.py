"""One DDP training run per variant, under `ember-run -n W`; each rank saves its final
parameters to OUT/<variant>-rank<r>.pt for tests/test_distributed_ddp.py to compare with a
single-process reference."""
import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from ddp_common import (BUCKET_MB, LR, data, make_model, shard, steps_for,  # noqa: E402
                        uses_extra)


def run(variant, device, out_dir):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(100 + rank, device, variant)     # DDP must broadcast rank 0's weights
    kwargs = dict(bucket_cap_mb=BUCKET_MB)
    if variant in ("static", "join_static"):
        kwargs["static_graph"] = True
    if variant in ("find_unused", "static"):
        kwargs["find_unused_parameters"] = variant == "find_unused"
    if variant == "as_view":
        kwargs["gradient_as_bucket_view"] = True
    ddp = DDP(model, **kwargs)
    if variant in ("fp16", "bf16", "allreduce_hook"):
        hook = {"fp16": default_hooks.fp16_compress_hook,
                "bf16": default_hooks.bf16_compress_hook,
                "allreduce_hook": default_hooks.allreduce_hook}[variant]
        ddp.register_comm_hook(None, hook)
    opt = ember.optim.SGD(ddp.parameters(), lr=LR, momentum=0.9)
    xs, ys = data(world)

    def step(i):
        x = ember.tensor(shard(xs, i, rank), device=device)
        y = ember.tensor(shard(ys, i, rank), device=device)
        opt.zero_grad()
        if variant == "no_sync":
            half = x.shape[0] // 2
            with ddp.no_sync():
                F.mse_loss(ddp(x[:half]), y[:half]).mul(0.5).backward()
            F.mse_loss(ddp(x[half:]), y[half:]).mul(0.5).backward()
        else:
            F.mse_loss(ddp(x, use_extra=uses_extra(rank, variant)), y).backward()
        opt.step()

    if variant.startswith("join"):
        with ddp.join():
            for i in range(steps_for(rank, variant)):
                step(i)
    else:
        for i in range(steps_for(rank, variant)):
            step(i)
    state = {k: v.detach().cpu() for k, v in ddp.state_dict().items()}
    state["__num_buckets"] = len(ddp.reducer.buckets)
    ember.save(state, os.path.join(out_dir, f"{variant}-{device}-rank{rank}.pt"))


def use_openreg():
    """The third-party example device, registered from its source tree as its entry point
    would register it."""
    import warnings
    plugin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugins",
                          "ember-openreg")
    sys.path.insert(0, os.path.abspath(plugin))
    import ember_openreg
    from ember.runtime.registry import registry
    registry.register_plugin(ember_openreg, name="openreg")
    warnings.simplefilter("ignore")   # its CPU-fallback notices


def main():
    out_dir, device = sys.argv[1], sys.argv[2]
    if device == "openreg":
        use_openreg()
    variants = sys.argv[3].split(",")
    dist.init_process_group("mpi", timeout=timedelta(seconds=60))
    for v in variants:
        run(v, device, out_dir)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
