"""``ember.data.datapipes.map``: every map-style DataPipe (torchdata's names)."""
from ember.utils.data.datapipes.map import *  # noqa: F401,F403
from ember.utils.data.datapipes.map import __all__  # noqa: F401
