"""Put on ``PYTHONPATH`` by ``ember run`` for the Python processes a script starts
(multiprocessing's spawn/forkserver workers, subprocesses): when ``EMBER_RUN_ALIAS`` is set,
``import torch`` there gives ember too, with the parent's device redirects.

ember is imported only when the process imports torch (or a package ``ember run`` refuses), so
children that never touch torch pay nothing for it. Then the environment's own
``sitecustomize`` (if any) runs, as it would without this one.
"""
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_outside():
    """ember/run/outside.py by its path (stdlib only): importing it as ``ember.run.outside``
    would import all of ember for every top-level import the child makes."""
    spec = importlib.util.spec_from_file_location(
        "_ember_run_outside", os.path.join(os.path.dirname(_HERE), "outside.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _LazyTorchAlias:
    """Installs ``ember.run.torch_alias`` at the first import it must answer for."""

    _outside = None

    def find_spec(self, fullname, path=None, target=None):
        head = fullname.partition(".")[0]
        if head not in ("torch", "torchdata"):
            if "." in fullname or fullname in sys.stdlib_module_names or \
                    fullname.startswith("ember"):
                return None
            if self._outside is None:
                self._outside = _load_outside()
            if fullname in os.environ.get("EMBER_RUN_ALLOW", "").split(",") or \
                    self._outside.refusal(fullname) is None:
                return None
        sys.meta_path.remove(self)
        # start-up: a child process imports ember only once it imports torch
        from ember.run.torch_alias import install_from_environment
        return install_from_environment().find_spec(fullname, path, target)


if os.environ.get("EMBER_RUN_ALIAS"):
    sys.meta_path.insert(0, _LazyTorchAlias())


def _chain():
    """Run the next ``sitecustomize`` on the path (this one shadows it)."""
    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_chain()
