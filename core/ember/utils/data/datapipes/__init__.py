"""``ember.utils.data.datapipes``: IterDataPipe/MapDataPipe and the built-in pipes
(``datapipes.iter``, ``datapipes.map``); also importable as ``ember.data.datapipes``."""
from . import iter, map, utils  # noqa: A004 - torch's module names
from ._decorator import functional_datapipe, guaranteed_datapipes_determinism, non_deterministic
from .datapipe import DataChunk, IterDataPipe, MapDataPipe

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe",
           "guaranteed_datapipes_determinism", "iter", "map", "non_deterministic", "utils"]
