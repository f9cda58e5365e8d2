"""The backend plugin contract.

A backend package is a pluggy plugin. It is found through an entry point in the group
``ember.backends`` in its ``pyproject.toml``::

    [project.entry-points."ember.backends"]
    foo = "ember_foo"          # the entry-point name is the device name it provides

``import ember`` only reads these entry-point names (so ``device="foo"``, ``ember.foo`` and
``Tensor.foo()`` resolve); the module itself is imported the first time the device is used.
Importing it must be cheap and must not touch the hardware: heavy imports (cupy, pyopencl) and
device initialisation belong in ``Backend.is_available`` / first allocation.

The module implements the hooks below as plain functions (or on an object) decorated with
``ember.runtime.hookimpl``. Built-in backends (cpu, cuda, opencl) use the same entry point and
the same hooks as a third-party package; nothing in the core names them.

What a backend is — kernels, allocator, streams, RNG, capabilities — is documented on
:class:`ember.runtime.Backend`, the base class a backend subclasses.
"""
import pluggy

hookspec = pluggy.HookspecMarker("ember")
hookimpl = pluggy.HookimplMarker("ember")


@hookspec(historic=True)
def ember_register_backends(registry):
    """Add this package's backends.

    Call ``registry.add(backend)`` once per device type the package provides, with an instance of
    an :class:`ember.runtime.Backend` subclass. ``backend.name`` is the device type users write
    (``"foo"`` in ``device="foo:0"``). A backend that can't run on this machine is still added:
    its ``is_available()`` returns False and ``unavailable_reason()`` says why, so ``ember info``
    can tell the user.
    """


@hookspec
def ember_register_ops(library):
    """Optionally define extra ops or kernels (``ember.library``) this package ships.

    Called right after this plugin's ``ember_register_backends`` with an
    :class:`ember.library.Library` whose ``impl`` may write only the kernel tables of the backends
    this plugin added: a plugin can override kernels of existing ops for its own devices and
    define new namespaced ops, but can never change what another backend runs.
    """


@hookspec(historic=True)
def ember_register_process_groups(registry):
    """Optionally add process-group backends for ``ember.distributed`` (e.g. NCCL for CUDA).

    Call ``registry.add(name, factory, devices=["cuda"])``: ``init_process_group(backend=name)``
    builds a group with ``factory(context)``, which returns an
    :class:`ember.distributed.ProcessGroupBackend` running the collectives for tensors of the
    listed device types (``devices=None``: any device). A backend listed for a device type is
    the default for it under ``init_process_group(backend=None)``; device types nobody claims
    use ember's MPI group, which serves every device through host buffers. Called once the
    plugin is loaded and ``ember.distributed`` needs backends; see
    ``ember.distributed.backend`` for the contract.
    """
