"""``ember.autograd.profiler``: PyTorch's legacy profiler API.

``with ember.autograd.profiler.profile() as prof: ...`` then ``prof.key_averages().table()``,
``prof.export_chrome_trace(path)``; ``record_function(name)`` marks a range. The implementation
is ``ember.profiler`` (see its module doc)."""
from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ..profiler._legacy import profile, record_function  # noqa: F401

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
