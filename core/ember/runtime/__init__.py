"""The runtime: the backend contract (hookspecs), the Backend base class, the registry."""
from .backend import Backend, HostEvent, HostStream, StreamBase
from .fallback_warning import CPUFallbackWarning
from .hookspecs import hookimpl, hookspec
from .kernels import KernelTable
from .registry import BackendUnavailable, registry

__all__ = ["Backend", "HostEvent", "HostStream", "StreamBase", "hookimpl", "hookspec", "KernelTable",
           "BackendUnavailable", "registry", "CPUFallbackWarning"]
