"""``ember.data.datapipes``: torchdata's ``torchdata.datapipes`` path to ember's DataPipes."""
from ember.utils.data.datapipes import (DataChunk, IterDataPipe, MapDataPipe,  # noqa: F401
                                        functional_datapipe)

from . import iter, map, utils  # noqa: F401,A004 - torchdata's module names

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe", "iter", "map",
           "utils"]
