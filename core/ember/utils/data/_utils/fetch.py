"""Fetchers: turn one index (or batch of indices) from the sampler into collated data."""
from __future__ import annotations

from .collate import default_collate


class _BaseDatasetFetcher:
    """What both fetchers keep (PyTorch's base of the same name)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last


class _MapDatasetFetcher(_BaseDatasetFetcher):
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        # Datasets that can build a default-collated batch directly (TensorDataset, Subset of
        # one) skip the per-sample indexing; they return NotImplemented when they cannot.
        fast = getattr(dataset, "_fetch_collated", None)
        self._fetch_collated = fast if auto_collation and collate_fn is default_collate else None
        getitems = getattr(dataset, "__getitems__", None)
        self._getitems = getitems if callable(getitems) else None

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        if self._fetch_collated is not None:
            batch = self._fetch_collated(possibly_batched_index)
            if batch is not NotImplemented:
                return batch
        if self._getitems is not None:
            data = self._getitems(possibly_batched_index)
        else:
            dataset = self.dataset
            data = [dataset[idx] for idx in possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableDatasetFetcher if is_iterable else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
