"""``ember.utils``: helpers with the names of ``torch.utils`` (``checkpoint``, ``data``)."""
from . import checkpoint  # noqa: F401


def __getattr__(name):
    # ember.utils.data loads on first use, so `import ember` does not import the DataLoader
    if name == "data":
        import importlib
        return importlib.import_module(".data", __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
