"""Point-to-point traffic and collectives in flight together (tests/test_distributed_p2p.py):
every round, rank 0 receives from any source (irecv posted before the round's asynchronous
collectives, then blocking recvs while they run) while the other ranks send; the collectives
carry payloads shaped like the point-to-point ones ([3, 4, 5] as in issue #36). A receive may
only ever get a point-to-point payload, and every collective its exact result."""
import sys

import numpy as np

import ember
import ember.distributed as dist

ROUNDS = 20


def p2p_value(round_, sender, kind):
    return float(1000 * kind + 20 * round_ + sender)  # kind 1: irecv with tag, 2: recv tag 0


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    impl = dist.group.WORLD._get_backend(ember.device("cpu"))
    from mpi4py import MPI
    # point-to-point has its own matching space: a communicator of its own, not the
    # collectives' (CONGRUENT: same ranks, other context)
    assert MPI.Comm.Compare(impl.p2p, impl.comm) == MPI.CONGRUENT, "p2p shares the comm"
    bad = []
    got_tag0 = []
    for k in range(ROUNDS):
        if rank == 0:
            bufs = [ember.zeros(3) for _ in range(world - 1)]
            posted = [dist.irecv(b, tag=100 + k) for b in bufs]   # any source, this round's tag
        works = []
        a = ember.full((3,), float(rank + 3))
        works.append(dist.all_reduce(a, async_op=True))
        b = ember.arange(3.0) + 3 if rank == 3 else ember.zeros(3)
        works.append(dist.broadcast(b, src=3, async_op=True))
        g = ember.zeros(3 * world)
        works.append(dist.all_gather_into_tensor(g, ember.arange(3.0) + 3, async_op=True))
        o = ember.zeros(3 * world)
        works.append(dist.all_to_all_single(o, ember.arange(3.0 * world) + rank, async_op=True))
        s = ember.zeros(3)
        works.append(dist.scatter(s, [ember.arange(3.0) + 3] * world if rank == 1 else None,
                                  src=1, async_op=True))
        if rank == 0:
            for _ in range(world - 1):   # blocking, any source, tag 0, collectives in flight
                buf = ember.zeros(3)
                src = dist.recv(buf)
                got_tag0.append((src, buf.tolist()))
            for w, buf in zip(posted, bufs):
                w.wait()
                v = buf.tolist()
                senders = [r for r in range(1, world) if v == [p2p_value(k, r, 1)] * 3]
                if not senders:
                    bad.append(f"round {k}: irecv(tag={100 + k}) got {v}")
        else:
            sends = [dist.isend(ember.full((3,), p2p_value(k, rank, 1)), dst=0, tag=100 + k),
                     dist.isend(ember.full((3,), p2p_value(k, rank, 2)), dst=0)]
            for w in sends:
                w.wait()
        for w in works:
            w.wait()
        want = {"all_reduce": [float(sum(r + 3 for r in range(world)))] * 3,
                "broadcast": [3.0, 4.0, 5.0], "all_gather": [3.0, 4.0, 5.0] * world,
                "all_to_all": [float(3 * rank + j + r) for r in range(world) for j in range(3)],
                "scatter": [3.0, 4.0, 5.0]}
        for name, t in zip(want, (a, b, g, o, s)):
            if t.tolist() != want[name]:
                bad.append(f"round {k}: {name} gave {t.tolist()}")
    if rank == 0:
        # tag 0 is shared by the rounds: a fast sender may be a round ahead, but each payload
        # must be one of the point-to-point ones, from the rank it says it came from
        for src, v in got_tag0:
            if not any(v == [p2p_value(j, src, 2)] * 3 for j in range(ROUNDS)):
                bad.append(f"recv from {src} got {v}")
        counts = np.bincount([src for src, _ in got_tag0], minlength=world)
        if list(counts[1:]) != [ROUNDS] * (world - 1):
            bad.append(f"tag-0 messages per sender {list(counts)}")
    dist.destroy_process_group()
    for line in bad:
        print(f"rank {rank}: BAD {line}", flush=True)
    print(f"rank {rank}: {'FAILED' if bad else 'OK'}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
