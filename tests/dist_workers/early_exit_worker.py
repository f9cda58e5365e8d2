"""A rank that leaves the job early (tests/test_distributed_p2p.py): ``victim`` calls
``os._exit(code)`` at ``when`` ("mid": between collectives, the others still working; "end":
after the others finished, without destroy_process_group)."""
import os
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

victim, code, when = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
dist.init_process_group("mpi", timeout=timedelta(seconds=3))
rank = dist.get_rank()
dist.all_reduce(ember.ones(3))
if rank == victim:
    if when == "end":
        time.sleep(5)   # the others destroy their group (its barrier times out) and finish
    os._exit(code)
if when == "mid":
    try:
        dist.all_reduce(ember.ones(3))
    except Exception as e:  # noqa: BLE001 - the peer is gone: the timeout names it
        print(f"rank {rank}: {type(e).__name__}", flush=True)
dist.destroy_process_group()
