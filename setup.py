"""Build of ember's compiled hot path, ``ember._C`` (issue #31); the rest of the project is
configured in pyproject.toml.

The extension is optional: where no C compiler (or no Python headers) is found, the install
goes on without it and ember runs its Python reference implementation of the same functions
(``ember info`` says which one is active; ``EMBER_PURE_PYTHON=1`` chooses the Python one).
"""
from pathlib import Path

from setuptools import Extension, setup

try:
    import numpy
except ImportError:  # a build without numpy's headers: no extension, the Python path runs
    numpy = None

SOURCES = sorted(str(p) for p in Path("core/ember/csrc").glob("*.c"))

setup(ext_modules=[] if numpy is None else [Extension(
    "ember._C", sources=SOURCES, include_dirs=[numpy.get_include()],
    depends=["core/ember/csrc/ember_c.h"], optional=True,
    extra_compile_args=["-O3", "-std=c11", "-pthread", "-Wall",
                        "-Wno-missing-field-initializers"],
    extra_link_args=["-pthread"])])
