"""ember-conformance: prove a backend agrees with the CPU reference.

``ember-conformance --backend B`` (or ``pytest --pyargs ember_conformance --backend B``) runs
every op of the op database on B — forward values and gradients against the CPU — plus the
device, copy, allocator, stream/event, RNG, view and error-message contracts. On the CPU it also
checks first and second derivatives (gradcheck, gradgradcheck) against finite differences.
"""
from .runner import run

__all__ = ["run"]
