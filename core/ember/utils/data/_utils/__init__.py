"""DataLoader internals: collation, fetching, workers, batch transfer, pinning."""
from . import collate, fetch, pin_memory, seeds, transfer, worker  # noqa: F401
from .worker import MP_STATUS_CHECK_INTERVAL  # noqa: F401
