"""Failure scenarios for tests/test_distributed_faults.py, run under ember-run:

  stuck <victim>   the victim rank stops calling collectives at step 5 of DDP training
  kill <victim>    the victim rank is SIGKILLed at step 5
  raise <victim>   the victim rank raises at step 5
  monitored        rank 1 never reaches monitored_barrier
"""
import os
import signal
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP


def train(victim, action, timeout):
    dist.init_process_group("mpi", timeout=timedelta(seconds=timeout))
    rank = dist.get_rank()
    ember.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)))
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1000):
        if step == 5 and rank == victim:
            print(f"rank {rank}: {action} at step {step}", flush=True)
            if action == "stuck":
                time.sleep(600)
            elif action == "kill":
                time.sleep(0.3)    # die between collectives, not in the middle of a transfer
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                raise RuntimeError("injected failure")
        x = ember.randn(4, 8)
        opt.zero_grad()
        F.mse_loss(model(x), x[:, :1]).backward()
        opt.step()
        time.sleep(0.01)
    print(f"rank {rank}: finished 1000 steps (unexpected)", flush=True)


def monitored(timeout):
    dist.init_process_group("mpi", timeout=timedelta(seconds=60))
    if dist.get_rank() == 1:
        time.sleep(600)
    dist.monitored_barrier(timeout=timedelta(seconds=timeout), wait_all_ranks=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "monitored":
        monitored(float(sys.argv[2]))
    else:
        train(int(sys.argv[2]), mode, float(sys.argv[3]))
