"""Data-parallel training with ember: run it on N processes with

    ember-run -n 2 examples/ddp_train.py --epochs 5

Each rank trains the same MLP on its shard of a synthetic classification set; DDP averages the
gradients across ranks while backward runs. Rank 0 prints the loss after each epoch (averaged
over ranks with all_reduce) and the final accuracy; with ``--save PATH`` it also saves the
trained weights there (nothing is written otherwise). Add --device opencl to train on OpenCL
tensors, or --device cuda (with `ember-run --nproc-per-node gpu`) for one rank per GPU over
NCCL.
"""
import argparse
from datetime import timedelta

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP


def synthetic_dataset(n=2048, features=20, classes=4, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.randn(classes, features) * 0.5
    labels = rng.randint(0, classes, n)
    x = centers[labels] + rng.randn(n, features)
    return x.astype(np.float32), labels.astype(np.int64)


def main():
    p = argparse.ArgumentParser(description="DistributedDataParallel on a synthetic "
                                "classification set: run under `ember-run -n N`",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=5, help="passes over each rank's shard")
    p.add_argument("--batch-size", type=int, default=64, help="samples per step, per rank")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (momentum 0.9)")
    p.add_argument("--device", default="cpu", help="device of every rank's model and data")
    p.add_argument("--static-graph", action="store_true", help="DDP(static_graph=True)")
    p.add_argument("--save", default=None, help="where rank 0 saves the trained weights "
                   "(default: not saved)")
    args = p.parse_args()

    # MPI for CPU (and OpenCL) tensors, NCCL for CUDA ones: the NCCL group puts each rank on
    # GPU LOCAL_RANK, so `ember-run --nproc-per-node gpu ... --device cuda` uses every GPU
    dist.init_process_group(None, timeout=timedelta(minutes=2))
    rank, world = dist.get_rank(), dist.get_world_size()

    x, y = synthetic_dataset()
    # every rank takes its own slice of each epoch's shuffled order (a DistributedSampler does
    # the same); the same seed on every rank keeps the shards disjoint
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 4)).to(args.device)
    ddp = DDP(model, static_graph=args.static_graph)
    opt = ember.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    per_rank = len(x) // world
    for epoch in range(args.epochs):
        order = np.random.RandomState(epoch).permutation(len(x))[rank * per_rank:
                                                                (rank + 1) * per_rank]
        total = ember.zeros(2, device=args.device)       # summed loss, sample count
        for start in range(0, per_rank - args.batch_size + 1, args.batch_size):
            idx = order[start:start + args.batch_size]
            xb = ember.tensor(x[idx], device=args.device)
            yb = ember.tensor(y[idx], device=args.device)
            opt.zero_grad()
            loss = F.cross_entropy(ddp(xb), yb)
            loss.backward()
            opt.step()
            total += ember.stack([loss.detach() * len(idx), ember.tensor(float(len(idx)),
                                                                        device=args.device)])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: loss {(total[0] / total[1]).item():.4f} over {world} ranks",
                  flush=True)

    with ember.no_grad():
        xb = ember.tensor(x, device=args.device)
        accuracy = (ddp(xb).argmax(1).cpu().numpy() == y).mean()
    if rank == 0:
        print(f"accuracy {accuracy:.3f}", flush=True)
        if args.save:
            ember.save(ddp.module.state_dict(), args.save)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
