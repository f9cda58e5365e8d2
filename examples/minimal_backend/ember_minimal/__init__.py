"""ember-minimal: the smallest complete ember backend, built only on ``ember.runtime``.

After ``pip install``, ``device="minimal"``, ``ember.minimal`` and ``Tensor.minimal()`` work.
It is synchronous (each kernel finishes before it returns), keeps tensors in numpy byte buffers
that are never shared with the host, has a handful of native kernels and lets ember's CPU
fallback run every other op. ``docs/writing-a-backend.md`` walks through it.

* ``__init__`` -- the plug-in hook (importing this module must stay cheap)
* ``backend``  -- ``MinimalBackend``: memory, tensors, copies
* ``kernels``  -- the native kernels: module-level functions, a ``TABLE``, ``register``
"""
from ember.runtime import hookimpl


@hookimpl
def ember_register_backends(registry):
    from .backend import MinimalBackend
    registry.add(MinimalBackend())
