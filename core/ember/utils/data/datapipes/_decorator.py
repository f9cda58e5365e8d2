"""``functional_datapipe`` and the determinism decorators (torch's names)."""
from __future__ import annotations

import inspect

from .datapipe import IterDataPipe, MapDataPipe, _DataPipeMeta


class functional_datapipe:
    """Register a DataPipe class under a functional name: ``@functional_datapipe("map")``.

    The class then also answers ``some_pipe.map(*args, **kwargs)`` on every pipe of its style,
    which calls ``cls(some_pipe, *args, **kwargs)``. A name that another class already holds is
    refused with torch's error; defining a class of the same name again replaces it.
    """

    name: str

    def __init__(self, name: str, enable_df_api_tracing=False) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"functional_datapipe: the functional name must be a Python "
                             f"identifier, got {name!r}")
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        target = cls.cls if isinstance(cls, non_deterministic) else cls
        if not isinstance(target, _DataPipeMeta):
            raise TypeError("`functional_datapipe` can only decorate IterDataPipe")
        if issubclass(target, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls,
                                                       self.enable_df_api_tracing)
        elif issubclass(target, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        return cls


_determinism = False


class guaranteed_datapipes_determinism:
    """Within this context, constructing a pipe marked ``non_deterministic`` raises."""

    def __init__(self) -> None:
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Mark a DataPipe class (or a class chooser function) as not reproducible."""

    def __init__(self, arg) -> None:
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError("Only `IterDataPipe` can be decorated with `non_deterministic`, "
                                f"but {arg.__name__} is found")
            self.cls = arg
            self.deterministic_fn = None
        elif callable(arg):
            self.cls = None
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TypeError(f"{self.cls.__name__} is non-deterministic, but you set "
                                "'guaranteed_datapipes_determinism'. You can turn off determinism "
                                "for this DataPipe if that is acceptable for your application")
            return self.cls(*args, **kwargs)
        if not (inspect.isclass(args[0]) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} "
                            "is found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs):
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TypeError("deterministic_fn of `non_deterministic` decorator is required to "
                            f"return a boolean value, but {type(res)} is found")
        if _determinism and res:
            raise TypeError(f"{self.cls.__name__} is non-deterministic with the inputs, but you "
                            "set 'guaranteed_datapipes_determinism'. You can turn off determinism "
                            "for this DataPipe if that is acceptable for your application")
        return self.cls(*args, **kwargs)
