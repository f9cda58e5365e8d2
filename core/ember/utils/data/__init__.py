"""``ember.utils.data``: torch's data loading API (``torch.utils.data``).

Datasets, samplers, ``DataLoader`` with worker processes, ``default_collate``, and the
composable DataPipes (``ember.utils.data.datapipes``, also ``ember.data.datapipes``).
"""
from . import datapipes, graph, graph_settings  # noqa: F401
from ._utils.collate import default_collate, default_convert
from ._utils.worker import get_worker_info
from .dataloader import DataLoader, _DatasetKind
from .datapipes._decorator import (functional_datapipe, guaranteed_datapipes_determinism,
                                   non_deterministic)
from .datapipes.datapipe import DataChunk, IterDataPipe, MapDataPipe
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                      TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataChunk", "DataLoader", "Dataset",
           "DistributedSampler", "IterDataPipe", "IterableDataset", "MapDataPipe",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "_DatasetKind",
           "default_collate", "default_convert", "functional_datapipe", "get_worker_info",
           "guaranteed_datapipes_determinism", "non_deterministic", "random_split"]
