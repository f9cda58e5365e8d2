"""A small backend with an injected bug, for the conformance runner's tests.

``buggydev``: numpy memory, copies and factories from the kit, a correct ``add`` and a ``mul``
that is 0.1 % off; every other op runs on the CPU fallback. Run as a script it registers itself
and runs ``ember-conformance`` with the script's arguments, as a third-party backend's CI would.
"""
from __future__ import annotations

import os
import sys

import ember
from ember.kit import ArrayBackend
from ember.kit.copy import register as register_copies
from ember.kit.factories import register as register_factories
from ember.runtime.registry import registry

MUL_ERROR = 1.001


class BuggyBackend(ArrayBackend):
    special = None
    cpu_fallback = True

    def __init__(self, name="buggydev", mul_error=MUL_ERROR):
        self.name = name
        super().__init__()
        register_copies(self)
        register_factories(self)
        xp, wrap = self.xp, self.wrap

        def native(x):  # scalars may arrive in tensor positions
            return self.native(x) if isinstance(x, ember.Tensor) else x

        self.kernels.register("add", lambda a, b, alpha, compute: wrap(
            xp.add(native(a), native(b) * alpha if alpha != 1 else native(b)).astype(compute.np),
            a.device))
        self.kernels.register("mul", lambda a, b, compute: wrap(
            (xp.multiply(native(a), native(b)) * mul_error).astype(compute.np), a.device))


def register(name="buggydev", mul_error=MUL_ERROR):
    backend = BuggyBackend(name, mul_error)
    registry.add(backend)
    return backend


if __name__ == "__main__":
    # BUGGYDEV_MUL_ERROR=1 gives the fixed backend (for --compare)
    register("buggydev", float(os.environ.get("BUGGYDEV_MUL_ERROR", MUL_ERROR)))
    from ember_conformance.cli import main
    sys.exit(main(sys.argv[1:]))
