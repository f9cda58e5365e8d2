"""Fake plug-in distributions for registry tests, driven through the real entry-point path.

``make_dist`` writes a ``*.dist-info`` (with ``entry_points.txt``) and its modules into a
directory; ``run`` starts a fresh interpreter with that directory on PYTHONPATH (plus any extra
source directories), so ``import ember`` discovers the plug-ins exactly as it would installed
ones.
"""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN_SOURCES = {"openreg": REPO / "plugins" / "ember-openreg",
                  "meta": REPO / "plugins" / "ember-meta",
                  "minimal": REPO / "examples" / "minimal_backend"}
PLUGIN_MODULES = {"openreg": "ember_openreg", "meta": "ember_meta", "minimal": "ember_minimal"}


def make_dist(root: Path, name: str, entry_points: dict, modules: dict | None = None) -> None:
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[ember.backends]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    for mod, source in (modules or {}).items():
        (root / f"{mod}.py").write_text(textwrap.dedent(source))


def add_repo_plugin(root: Path, name: str) -> Path:
    """A dist-info for one of the repository's plug-ins (by device name), without installing
    it; returns the source directory to put on PYTHONPATH."""
    make_dist(root, f"ember_{name}_src", {name: PLUGIN_MODULES[name]})
    return PLUGIN_SOURCES[name]


def run(code: str, path, *args, extra_paths=(), timeout=120, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    full_env.update(PYTHONPATH=os.pathsep.join([str(path), *map(str, extra_paths)]), **env)
    return subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(code),
                           *map(str, args)], capture_output=True, text=True, env=full_env,
                          timeout=timeout)


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-")


def project_site_without(dest: Path, *dists: str) -> Path:
    """A directory of links to this venv's site-packages entries, leaving out the files of the
    installed distributions ``dists``: what a test venv adds (``site.addsitedir``) to see the
    project's packages while it installs and uninstalls one of those plug-ins itself, whether or
    not the project venv has the plug-in too."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    wanted = {_normalized(n) for n in dists}
    hidden = set()
    # only what is installed there (a plug-in's source tree on sys.path has metadata too)
    for dist in importlib.metadata.distributions(path=[str(purelib)]):
        if _normalized(dist.metadata["Name"]) in wanted:
            hidden.update(Path(f).parts[0] for f in dist.files or ())
    dest.mkdir(parents=True)
    for entry in purelib.iterdir():
        if entry.name not in hidden:
            (dest / entry.name).symlink_to(entry)
    return dest
