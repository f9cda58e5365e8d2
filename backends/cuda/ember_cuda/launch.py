"""Compiled programs and kernel launches: the one place the backend starts a hand-written kernel.

A *program* is CUDA C source compiled by NVRTC (through ``cupy.RawModule``, which caches the
binary per device in memory and on disk), made once per backend and key. Every kernel of the
backend loops grid-stride (``EMBER_LOOP``), so the launch shape is a performance choice only:
256 threads per block, enough blocks to cover the elements up to a cap beyond which the loop
strides.
"""
from __future__ import annotations

BLOCK = 256
MAX_BLOCKS = 8192


class Program:
    """A compiled module and the kernel functions taken from it so far."""

    __slots__ = ("module", "functions")

    def __init__(self, module):
        self.module = module
        self.functions = {}

    def function(self, name):
        fn = self.functions.get(name)
        if fn is None:
            fn = self.functions[name] = self.module.get_function(name)
        return fn


def blocks_for(n: int) -> int:
    return max(1, min((n + BLOCK - 1) // BLOCK, MAX_BLOCKS))


def launch(be, program, name, n, args) -> None:
    """Run kernel ``name`` of ``program`` over ``n`` work items on the current stream."""
    program.function(name)((blocks_for(n),), (BLOCK,), args)
