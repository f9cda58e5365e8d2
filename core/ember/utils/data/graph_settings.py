"""Settings applied across a DataPipe graph: sharding, shuffling on/off, random seeds."""
from __future__ import annotations

import inspect
import warnings

from ...runtime.generator import Generator
from ._utils.seeds import draw_seed
from .datapipes.datapipe import IterDataPipe
from .datapipes.iter.grouping import SHARDING_PRIORITIES, _ShardingIterDataPipe
from .graph import traverse_dps
from ..._warn import user_stacklevel

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_seed", "apply_shuffle_settings",
           "get_all_graph_pipes"]


def get_all_graph_pipes(graph) -> list:
    results, seen = [], set()

    def walk(g):
        for dp_id, (datapipe, sub_graph) in g.items():
            if dp_id in seen:
                continue
            seen.add(dp_id)
            results.append(datapipe)
            walk(sub_graph)

    walk(graph)
    return results


def _is_sharding_datapipe(datapipe) -> bool:
    return isinstance(datapipe, _ShardingIterDataPipe) or (
        hasattr(datapipe, "apply_sharding") and inspect.ismethod(datapipe.apply_sharding))


def apply_sharding(datapipe, num_of_instances: int, instance_id: int,
                   sharding_group=SHARDING_PRIORITIES.DEFAULT):
    """Tell every sharding pipe (``sharding_filter``) which share of the items to keep.

    Two sharding pipes on one path from the output to a source would each drop items; that is
    refused with torch's error.
    """
    def walk(graph, applied=None):
        for dp, sub_graph in graph.values():
            here = None
            if _is_sharding_datapipe(dp):
                if applied is not None:
                    raise RuntimeError("Sharding twice on a single pipeline is likely unintended "
                                       "and will cause data loss. Sharding already applied to "
                                       f"{applied} while trying to apply to {dp}")
                if len(inspect.signature(dp.apply_sharding).parameters) < 3:
                    dp.apply_sharding(num_of_instances, instance_id)
                else:
                    dp.apply_sharding(num_of_instances, instance_id, sharding_group=sharding_group)
                here = dp
            walk(sub_graph, here if here is not None else applied)

    walk(traverse_dps(datapipe))
    return datapipe


def _is_shuffle_datapipe(datapipe) -> bool:
    return all(hasattr(datapipe, name) and inspect.ismethod(getattr(datapipe, name))
               for name in ("set_shuffle", "set_seed"))


def apply_shuffle_settings(datapipe, shuffle=None):
    """Turn every shuffling pipe on or off (None: leave them); with ``shuffle=True`` and no
    shuffling pipe in the graph, a ``shuffle()`` is added at the end, with torch's warning."""
    if shuffle is None:
        return datapipe
    shufflers = [p for p in get_all_graph_pipes(traverse_dps(datapipe)) if _is_shuffle_datapipe(p)]
    if not shufflers and shuffle:
        warnings.warn("`shuffle=True` was set, but the datapipe does not contain a `Shuffler`. "
                      "Adding one at the end. Be aware that the default buffer size might not be "
                      "sufficient for your task.", stacklevel=user_stacklevel())
        datapipe = datapipe.shuffle()
        shufflers = [datapipe]
    for shuffler in shufflers:
        shuffler.set_shuffle(shuffle)
    return datapipe


def apply_random_seed(datapipe, rng):
    """Give every pipe with ``set_seed`` a seed drawn from the ember Generator ``rng``, in
    graph order, so equal graphs seeded alike (e.g. in every DataLoader worker) agree."""
    seen, random_pipes = set(), []
    for pipe in get_all_graph_pipes(traverse_dps(datapipe)):
        if id(pipe) not in seen and hasattr(pipe, "set_seed") and inspect.ismethod(pipe.set_seed):
            seen.add(id(pipe))
            random_pipes.append(pipe)
    for pipe in random_pipes:
        pipe.set_seed(draw_seed(rng))
    return datapipe


def apply_shuffle_seed(datapipe, rng):
    warnings.warn("`apply_shuffle_seed` is deprecated since 1.12 and will be removed in the "
                  "future releases. Please use `apply_random_seed` instead.", FutureWarning,
                  stacklevel=user_stacklevel())
    return apply_random_seed(datapipe, rng)


def seed_datapipe_graph(dataset, shared_seed):
    """In a DataLoader worker: seed a DataPipe graph's random pipes from the loader's shared
    seed, so every worker's copy agrees (what ``_worker_loop`` receives as ``reseed``)."""
    if isinstance(dataset, IterDataPipe) and shared_seed is not None:
        rng = Generator()
        rng.manual_seed(shared_seed)
        apply_random_seed(dataset, rng)
