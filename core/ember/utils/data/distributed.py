"""``DistributedSampler``: each of ``num_replicas`` processes gets its own share of indices."""
from __future__ import annotations

import math
import ember

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _process_group_setting(what: str) -> int:
    """World size or rank from ``ember.distributed``."""
    dist = ember.distributed
    available = getattr(dist, "is_available", lambda: False)()
    initialized = available and getattr(dist, "is_initialized", lambda: False)()
    if not initialized:
        raise RuntimeError(f"DistributedSampler: `{what}` was not given and there is no "
                           "initialized ember.distributed process group to read it from; pass "
                           "num_replicas= and rank= explicitly or call "
                           "ember.distributed.init_process_group() first")
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


class DistributedSampler(Sampler):
    """Indices of ``dataset`` for replica ``rank`` of ``num_replicas`` (torch's algorithm).

    With ``shuffle`` the order is ``ember.randperm`` seeded by ``seed + epoch`` (the same on
    every replica; call ``set_epoch`` each epoch). Without ``drop_last`` the index list is
    padded by repeating its start so it divides evenly; with it the tail is dropped.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _process_group_setting("num_replicas")
        if rank is None:
            rank = _process_group_setting("rank")
        if isinstance(num_replicas, bool) or not isinstance(num_replicas, int) or \
                num_replicas <= 0:
            raise ValueError(f"num_replicas should be a positive integer, got {num_replicas!r}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        indices = indices[self.rank:self.total_size:self.num_replicas]
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle differently next epoch (all replicas must pass the same ``epoch``)."""
        self.epoch = epoch
