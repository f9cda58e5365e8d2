"""``ember.data.datapipes.iter``: every iterable-style DataPipe (torchdata's names)."""
from ember.utils.data.datapipes.iter import *  # noqa: F401,F403
from ember.utils.data.datapipes.iter import __all__  # noqa: F401
