"""The Python half of ``bench/gpu_check.sh`` (which runs the stages under time limits):

    python bench/gpu_check_tools.py install ROOT     # editable install, with a fallback
    python bench/gpu_check_tools.py probe            # the GPU, versions, a first kernel
    python bench/gpu_check_tools.py conformance BACKEND K N OUT.jsonl   # shard K of N
    python bench/gpu_check_tools.py summarize OUT    # the results folder's summary

``install`` runs ``pip install --no-deps --no-build-isolation -e ROOT``. A fresh Python 3.12
environment has no setuptools, and without network pip cannot fetch it: then the install is
done by hand -- a ``.pth`` file naming the source folders and an ``ember`` dist-info with the
entry points from pyproject.toml (the backends are found through them) in site-packages.
``probe`` exits 3 with "no GPU: <reason>" when ember's CUDA backend is unavailable.
``conformance`` is ``ember-conformance --backend BACKEND`` split into shards that run at once
(cupy compiles each kernel on first use: the shards compile in parallel), saving each result
as it comes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SOURCES = ("core", "backends/cpu", "backends/cuda", "backends/opencl", "conformance")


def _site_packages():
    import site
    import sysconfig
    purelib = Path(sysconfig.get_paths()["purelib"])
    if os.access(purelib, os.W_OK):
        return purelib
    user = Path(site.getusersitepackages())
    user.mkdir(parents=True, exist_ok=True)
    return user


def manual_install(root: Path, site_dir: Path) -> Path:
    """An editable install without setuptools: the .pth file and the dist-info (METADATA and
    entry_points.txt) pip would write. Returns the dist-info folder."""
    try:
        import tomllib
    except ImportError:   # Python < 3.11 has pip, and setuptools with it
        raise SystemExit("the by-hand install needs Python >= 3.11 (tomllib)") from None
    meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    (site_dir / "__editable__ember.pth").write_text(
        "".join(f"{root / s}\n" for s in SOURCES))
    info = site_dir / f"ember-{meta['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: ember\n"
                                   f"Version: {meta['version']}\n")
    groups = dict(meta.get("entry-points", {}))
    groups["console_scripts"] = meta.get("scripts", {})
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in groups.items()))
    (info / "INSTALLER").write_text("gpu_check\n")
    (info / "RECORD").write_text("")
    return info


def install(root: str) -> int:
    root = Path(root).resolve()
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
           "-e", str(root)]
    print("$", " ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    if r.returncode == 0:
        return 0
    print(f"pip failed (exit {r.returncode}); installing by hand (no setuptools here?)",
          flush=True)
    info = manual_install(root, _site_packages())
    print(f"wrote {info} and __editable__ember.pth", flush=True)
    check = subprocess.run([sys.executable, "-c", "import ember, ember_cuda; "
                            "from importlib.metadata import entry_points; "
                            "print(sorted(e.name for e in entry_points(group='ember.backends')))"],
                           capture_output=True, text=True)
    print(check.stdout, check.stderr, flush=True)
    return check.returncode


def probe() -> int:
    t = time.perf_counter()
    import ember
    print(f"ember {ember.__version__} from {Path(ember.__file__).parent}")
    for name in ("numpy", "cupy", "torch", "ml_dtypes", "mpi4py", "scipy"):
        try:
            mod = __import__(name)
            print(f"{name} {getattr(mod, '__version__', '?')}")
        except Exception as e:   # noqa: BLE001 - reported
            print(f"{name}: {type(e).__name__}: {e}")
    reason = ember.cuda.unavailable_reason()
    if reason is not None:
        print(f"no GPU: {reason}")
        return 3
    from ember.runtime import registry
    be = registry.get("cuda")
    for i in range(ember.cuda.device_count()):
        print(f"cuda:{i}", be.device_details(i))
    x = ember.randn(256, 256, device="cuda")
    print("first matmul:", float((x @ x).sum().item()))
    from ember_cuda import sources
    for name, src in sources.programs().items():   # NVRTC on this GPU's architecture
        be.program(name, lambda src=src: src).module.compile()
        print(f"NVRTC program '{name}' compiled")
    try:
        nccl = be._api.nccl_module()
        print("NCCL", nccl.get_version())
    except Exception as e:   # noqa: BLE001 - reported; the NCCL case will say more
        print(f"NCCL unavailable: {e}")
    print(f"probe took {time.perf_counter() - t:.1f} s")
    return 0


def conformance(backend: str, shard: int, count: int, out: str) -> int:
    """``ember-conformance --backend BACKEND`` for shard ``shard`` of ``count`` (round robin
    over the op entries; shard 0 also runs the coverage check and the contract suites), one
    entry at a time with every result appended to ``out`` (JSON lines) as it comes, so a stage
    cut by its time limit keeps what it finished."""
    from dataclasses import asdict

    from ember_conformance.contracts import SUITES
    from ember_conformance.runner import run
    from ember_conformance.selection import OP_SUITES, all_opinfos
    names = [i.name for i in all_opinfos()][shard::count]
    suites = ",".join(OP_SUITES + ("vmap", "jvp"))
    failed = 0
    with open(out, "a") as fh:
        def save(results):
            nonlocal failed
            for r in results:
                row = asdict(r)
                fh.write(json.dumps({k: row.get(k) for k in ("suite", "name", "dtype",
                                                            "status", "message")}) + "\n")
                failed += r.status == "fail"
            fh.flush()
        for name in names:
            save(run(backend, name, suites=suites, include_contracts=False, check_fd=False))
        if shard == 0:
            save(run(backend, names[0], suites=",".join(("coverage",) + tuple(SUITES)),
                     check_fd=False))
    print(f"shard {shard}/{count}: {len(names)} entries, {failed} failing results")
    return 1 if failed else 0


def _tests(out: Path):
    xml = out / "tests.xml"
    if xml.exists():
        import xml.etree.ElementTree as ET
        suite = ET.parse(xml).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        total = int(suite.get("tests", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        names = [c.get("name") for c in suite.iter("testcase")
                 if c.find("failure") is not None or c.find("error") is not None]
        return total - failed - skipped, failed, skipped, names
    js = out / "tests.json"
    if js.exists():
        rows = json.loads(js.read_text())
        return (sum(r["status"] == "PASS" for r in rows), sum(r["status"] == "FAIL" for r in rows),
                sum(r["status"] == "SKIP" for r in rows),
                [r["test"] for r in rows if r["status"] == "FAIL"])
    return None


def _conformance(out: Path):
    counts, failed = {}, []
    files = sorted(out.glob("conformance-*.jsonl"))
    if not files:
        return None
    for f in files:
        for line in f.read_text().splitlines():
            r = json.loads(line)
            counts[r["status"]] = counts.get(r["status"], 0) + 1
            if r["status"] == "fail":
                failed.append(f"{r['suite']} {r['name']} {r['dtype']}")
    return counts, failed, len(files)


def summarize(out: str) -> int:
    out = Path(out)
    lines = ["", "== results =="]
    tests = _tests(out)
    if tests is None:
        lines.append("tests/test_cuda_gpu.py: no results (see tests.log)")
    else:
        p, f, s, names = tests
        lines.append(f"tests/test_cuda_gpu.py: {p} passed, {f} failed, {s} skipped"
                     + (f"; failed: {', '.join(names[:12])}" if names else ""))
    conf = _conformance(out)
    if conf is None:
        lines.append("conformance (cuda): no results (see conformance-*.log)")
    else:
        counts, failed, n = conf
        total = sum(counts.values())
        lines.append(f"conformance (cuda, {n} shards): {total} cells: " +
                     ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) +
                     (f"; failing: {', '.join(failed[:12])}" if failed else ""))
    bench = out / "bench.json"
    if bench.exists():
        data = json.loads(bench.read_text())
        lines.append(f"bench on {data.get('device')} (torch {data.get('torch')}):")
        for r in data.get("rows", []):
            e, t = r.get("ember"), r.get("torch")
            ratio = f"  ember/torch {e / t:.2f}" if e is not None and t else ""
            lines.append(f"  {r['case']:36} {r['unit']:8} ember {e:10.3f}"
                         + (f"  torch {t:10.3f}" if t is not None else "") + ratio)
        for name, g in data.get("targets", {}).items():
            lines.append(f"  target {name}: {'met' if g['met'] else 'NOT met'} "
                         f"(ratio {g['ratio']:.2f})")
        for name, err in data.get("errors", {}).items():
            lines.append(f"  case {name} failed: {err}")
    else:
        lines.append("bench: no results (see bench.log)")
    text = "\n".join(lines) + "\n"
    with open(out / "summary.txt", "a") as fh:
        fh.write(text)
    print(text)
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "install":
        return install(rest[0])
    if cmd == "probe":
        return probe()
    if cmd == "conformance":
        return conformance(rest[0], int(rest[1]), int(rest[2]), rest[3])
    if cmd == "summarize":
        return summarize(rest[0])
    print(f"unknown command {cmd!r}\n{__doc__}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
