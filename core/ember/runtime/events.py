"""What the runtime announces, for the layers above it to act on (publish/subscribe).

The runtime is the floor: it never imports the dispatcher, the library or the op modules. When
something changes that those layers cache or extend, the runtime *publishes* an event and they,
having *subscribed* when they were imported, react:

======================  =====================================  ===============================
topic                   arguments                              who listens (and does what)
======================  =====================================  ===============================
``KERNEL_CHANGED``      ``(backend_name, op_name)``; both      the dispatcher: forgets cached
                        ``None`` when every resolution may     resolutions of that op
                        be stale (kernel checks toggled)
``BACKEND_ADDED``       ``(backend)``                          ``ember.library``: installs the
                                                               kernels kept for it; the
                                                               dispatcher: forgets resolutions
``BACKEND_REMOVED``     ``(name)``                             the dispatcher: forgets
                                                               resolutions
``BACKEND_ANNOUNCED``   ``(name)``: a device type became      ``ember``: ``Tensor.<name>()``,
                        known (entry point or registration)    ``Tensor.is_<name>``
``PLUGIN_REGISTERED``   ``(plugin_name, backend_names,         ``ember.library``: calls
                        call_register_ops)``                   ``call_register_ops(library)``
                                                               with a library limited to
                                                               ``backend_names``
``DEVICE_REDIRECTED``   ``(source, target)``: devices of type  device modules: ``ember.<source>``
                        ``source`` now are ``target``'s        becomes ``ember.<target>``
                        (``target == source``: undone)
======================  =====================================  ===============================

Subscribers run synchronously, in subscription order, on the publishing thread; an exception in
one propagates to the publisher (a subscriber is core code, not a plug-in).
"""
from __future__ import annotations

import threading

KERNEL_CHANGED = "kernel-changed"
BACKEND_ADDED = "backend-added"
BACKEND_REMOVED = "backend-removed"
BACKEND_ANNOUNCED = "backend-announced"
PLUGIN_REGISTERED = "plugin-registered"
DEVICE_REDIRECTED = "device-redirected"

TOPICS = (KERNEL_CHANGED, BACKEND_ADDED, BACKEND_REMOVED, BACKEND_ANNOUNCED, PLUGIN_REGISTERED,
          DEVICE_REDIRECTED)

# topic -> tuple of subscribers; replaced (never mutated) so publishing needs no lock
_subscribers: dict = {topic: () for topic in TOPICS}
_lock = threading.Lock()


def subscribe(topic: str, fn) -> None:
    """Call ``fn(*args)`` on every later ``publish(topic, *args)``."""
    if topic not in _subscribers:
        raise ValueError(f"unknown runtime event {topic!r}; topics: {', '.join(TOPICS)}")
    with _lock:
        _subscribers[topic] = _subscribers[topic] + (fn,)


def unsubscribe(topic: str, fn) -> None:
    """Stop calling ``fn`` for ``topic`` (no error if it was not subscribed)."""
    with _lock:
        _subscribers[topic] = tuple(f for f in _subscribers[topic] if f is not fn)


def publish(topic: str, *args) -> None:
    """Tell every subscriber of ``topic``."""
    for fn in _subscribers[topic]:
        fn(*args)
