"""Every collective on every rank, checked against numpy: each rank's contribution is a known
function of its rank, so every rank can compute what the result must be. Run under ember-run;
exits non-zero on the first mismatch. Argument: the device ("cpu" or "opencl")."""
import sys
from datetime import timedelta

import numpy as np

import ember
import ember.distributed as dist

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
checks = [0]


def contribution(rank, shape, dtype):
    n = int(np.prod(shape)) if shape else 1
    base = (np.arange(n) % 7 + 1 + 2 * rank).reshape(shape)
    if dtype is ember.bool:
        return ((np.arange(n) + rank) % 3 == 0).reshape(shape)
    return base.astype(dtype.np)


def t(a, dtype=None):
    return ember.tensor(a, dtype=dtype, device=DEVICE)


def check(got, want, what, rtol=1e-6):
    got = got.cpu().numpy() if isinstance(got, ember.Tensor) else np.asarray(got)
    want = np.asarray(want)
    if got.dtype.kind == "f" or got.dtype.name == "bfloat16":
        ok = got.shape == want.shape and np.allclose(got.astype(np.float64),
                                                     want.astype(np.float64), rtol=rtol)
    else:
        ok = got.shape == want.shape and np.array_equal(got, want)
    if not ok:
        raise AssertionError(f"rank {dist.get_rank()}: {what}: got {got!r}, expected {want!r}")
    checks[0] += 1


def reductions(world, rank):
    ops = {dist.ReduceOp.SUM: np.add.reduce, dist.ReduceOp.PRODUCT: np.multiply.reduce,
           dist.ReduceOp.MIN: np.minimum.reduce, dist.ReduceOp.MAX: np.maximum.reduce}
    from ember.runtime.registry import registry
    supported = registry.get(DEVICE).dtypes
    dtypes = [d for d in (ember.float32, ember.float64, ember.int32, ember.int64, ember.int8,
                          ember.uint8, ember.float16, ember.bfloat16) if d in supported]
    for dtype in dtypes:
        parts = [contribution(r, (3, 5), dtype) for r in range(world)]
        for op, red in ops.items():
            want = red(np.stack(parts)).astype(dtype.np)
            x = t(parts[rank], dtype)
            dist.all_reduce(x, op=op)
            check(x, want, f"all_reduce {op.name} {dtype}", rtol=1e-2 if dtype.itemsize == 2
                  else 1e-6)
        if dtype.is_floating_point:
            x = t(parts[rank], dtype)
            dist.all_reduce(x, op=dist.ReduceOp.AVG)
            check(x, np.mean(np.stack(parts).astype(np.float64), 0), f"all_reduce AVG {dtype}",
                  rtol=1e-2 if dtype.itemsize == 2 else 1e-6)
        else:
            for op, red in ((dist.ReduceOp.BAND, np.bitwise_and.reduce),
                            (dist.ReduceOp.BOR, np.bitwise_or.reduce),
                            (dist.ReduceOp.BXOR, np.bitwise_xor.reduce)):
                x = t(parts[rank], dtype)
                dist.all_reduce(x, op=op)
                check(x, red(np.stack(parts)), f"all_reduce {op.name} {dtype}")
    bools = [contribution(r, (4,), ember.bool) for r in range(world)]
    x = t(bools[rank], ember.bool)
    dist.all_reduce(x)
    check(x, np.logical_or.reduce(np.stack(bools)), "all_reduce SUM bool")
    x = t(bools[rank], ember.bool)
    dist.all_reduce(x, op=dist.ReduceOp.MIN)
    check(x, np.logical_and.reduce(np.stack(bools)), "all_reduce MIN bool")
    if ember.complex64 not in supported:
        return
    cparts = [contribution(r, (3,), ember.float32) + 1j * r for r in range(world)]
    x = t(np.asarray(cparts[rank], np.complex64))
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    check(x, np.mean(np.stack(cparts), 0).astype(np.complex64), "all_reduce AVG complex64")


def data_movement(world, rank):
    f32 = ember.float32
    parts = [contribution(r, (2, 3), f32) for r in range(world)]
    for src in range(world):
        x = t(parts[rank])
        dist.broadcast(x, src=src)
        check(x, parts[src], f"broadcast src={src}")
    for dst in range(world):
        x = t(parts[rank])
        dist.reduce(x, dst=dst, op=dist.ReduceOp.MAX)
        if rank == dst:
            check(x, np.maximum.reduce(np.stack(parts)), f"reduce MAX dst={dst}")
    outs = [t(np.zeros((2, 3), np.float32)) for _ in range(world)]
    dist.all_gather(outs, t(parts[rank]))
    for r in range(world):
        check(outs[r], parts[r], f"all_gather[{r}]")
    out = t(np.zeros((2 * world, 3), np.float32))
    dist.all_gather_into_tensor(out, t(parts[rank]))
    check(out, np.concatenate(parts), "all_gather_into_tensor")
    # reduce_scatter: rank r contributes blocks b_j = contribution(r + j); rank j gets sum_r
    blocks = [[contribution(r + j, (4,), f32) for j in range(world)] for r in range(world)]
    out = t(np.zeros(4, np.float32))
    dist.reduce_scatter(out, [t(b) for b in blocks[rank]])
    check(out, sum(blocks[r][rank] for r in range(world)), "reduce_scatter")
    out = t(np.zeros(4, np.float32))
    dist.reduce_scatter_tensor(out, t(np.concatenate(blocks[rank])), op=dist.ReduceOp.AVG)
    check(out, sum(blocks[r][rank] for r in range(world)) / world, "reduce_scatter_tensor AVG")
    dst = world - 1
    gl = [t(np.zeros((2, 3), np.float32)) for _ in range(world)] if rank == dst else None
    dist.gather(t(parts[rank]), gl, dst=dst)
    if rank == dst:
        for r in range(world):
            check(gl[r], parts[r], f"gather[{r}]")
    out = t(np.zeros((2, 3), np.float32))
    dist.scatter(out, [t(p) for p in parts] if rank == 0 else None, src=0)
    check(out, parts[rank], "scatter")
    # all_to_all: rank r sends block j (r*10 + j, length j + 1) to rank j
    ins = [t(np.full(j + 1, r * 10 + j, np.float32)) for r in [rank] for j in range(world)]
    outs = [t(np.zeros(rank + 1, np.float32)) for _ in range(world)]
    dist.all_to_all(outs, ins)
    for r in range(world):
        check(outs[r], np.full(rank + 1, r * 10 + rank, np.float32), f"all_to_all from {r}")
    x = t(np.arange(world * 2, dtype=np.float32) + 100 * rank)
    y = t(np.zeros(world * 2, np.float32))
    dist.all_to_all_single(y, x)
    want = np.concatenate([np.arange(world * 2, dtype=np.float32)[2 * rank:2 * rank + 2] +
                           100 * r for r in range(world)])
    check(y, want, "all_to_all_single")


def p2p_and_objects(world, rank):
    right, left = (rank + 1) % world, (rank - 1) % world
    out = t(np.zeros(3, np.float32))
    sends = dist.isend(t(np.full(3, rank, np.float32)), dst=right, tag=5)
    dist.recv(out, src=left, tag=5)
    sends.wait()
    check(out, np.full(3, left, np.float32), "isend/recv ring")
    if rank == 0:
        senders = set()
        for _ in range(world - 1):
            buf = t(np.zeros(1, np.float32))
            sender = dist.recv(buf)
            senders.add(sender)
            check(buf, [float(sender)], "recv from any source: payload = sender")
        check(np.array(sorted(senders)), np.arange(1, world), "recv from any source")
    else:
        dist.send(t(np.full(1, rank, np.float32)), dst=0)
    objs = [{"step": 3, "name": "ember", "t": ember.arange(3)}, [1.5, None]] if rank == 0 \
        else [None, None]
    dist.broadcast_object_list(objs, src=0)
    check(objs[0]["t"], np.arange(3), "broadcast_object_list tensor")
    check(np.array([objs[0]["step"]]), [3], "broadcast_object_list int")
    gathered = [None] * world
    dist.all_gather_object(gathered, {"rank": rank, "pad": "x" * rank})
    check(np.array([g["rank"] for g in gathered]), np.arange(world), "all_gather_object")
    outl = [None]
    dist.scatter_object_list(outl, [f"to{r}" for r in range(world)] if rank == 0 else None,
                             src=0)
    check(np.array([outl[0] == f"to{rank}"]), [True], "scatter_object_list")
    w = dist.all_reduce(t(np.ones(4, np.float32)), async_op=True)
    fut = w.get_future().then(lambda f: f.value()[0] * 2)
    check(fut.wait(), np.full(4, 2.0 * world, np.float32), "async all_reduce future then")
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=30))


def subgroups(world, rank):
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    odds = dist.new_group([r for r in range(world) if r % 2 == 1])
    mine = evens if rank % 2 == 0 else odds
    x = t(np.full(2, rank, np.float32))
    dist.all_reduce(x, group=mine)
    members = [r for r in range(world) if r % 2 == rank % 2]
    check(x, np.full(2, sum(members), np.float32), "all_reduce on a new_group")
    check(np.array([dist.get_rank(mine), dist.get_world_size(mine)]),
          [members.index(rank), len(members)], "group rank/size")
    other = odds if rank % 2 == 0 else evens
    if other is not dist.GroupMember.NON_GROUP_MEMBER:
        raise AssertionError("a rank outside a group must get NON_GROUP_MEMBER")
    x = t(np.full(2, rank, np.float32))
    dist.broadcast(x, src=members[-1], group=mine)
    check(x, np.full(2, members[-1], np.float32), "broadcast on a new_group (global src)")
    dist.destroy_process_group(mine)


def main():
    dist.init_process_group("mpi", timeout=timedelta(seconds=60))
    world, rank = dist.get_world_size(), dist.get_rank()
    reductions(world, rank)
    data_movement(world, rank)
    p2p_and_objects(world, rank)
    subgroups(world, rank)
    dist.destroy_process_group()
    print(f"rank {rank}: OK {checks[0]} checks", flush=True)


if __name__ == "__main__":
    main()
