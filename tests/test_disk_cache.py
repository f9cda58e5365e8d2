"""ember's on-disk caches (``ember.runtime.DiskCache``): no other local user can plant code in
them, damaged entries are rebuilt, and writes are atomic on any file system. Exercised through
the caches ember keeps: the CPU backend's compiled loops and OpenCL program binaries."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from ember.runtime import CacheDirectoryError, DiskCache
from ember.runtime import disk_cache

fusion = pytest.importorskip("ember_cpu.fusion")
needs_cc = pytest.mark.skipif(fusion.compiler() is None, reason="no C compiler")

# a stand-in for a generated loop: the real signature, a recognisable result
_SIG = ("int kernel(int64_t inner, int nd, const int64_t* oshape, const int64_t* ostr, "
        "void** in, const int64_t* istr, void** out, int64_t p, int64_t hi)")


def _source(tag, result=7):
    return f"#include <stdint.h>\n/* {tag} */\n{_SIG} {{ return {result}; }}\n"


def _call(fn):
    return fn(0, 0, None, None, None, None, None, 0, 0)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("EMBER_CACHE_DIR", str(root))
    return root


def _plant(path, marker, result):
    """A shared object at ``path`` whose constructor writes ``marker`` when it is loaded."""
    src = path.parent / "evil.c"
    src.write_text(f"#include <stdio.h>\n#include <stdint.h>\n"
                   f"__attribute__((constructor)) static void pwn(void) {{\n"
                   f"  FILE* f = fopen(\"{marker}\", \"w\"); if (f) {{ fputs(\"ran\", f); "
                   f"fclose(f); }} }}\n{_SIG} {{ return {result}; }}\n")
    subprocess.run([fusion.compiler(), "-shared", "-fPIC", str(src), "-o", str(path)],
                   check=True)
    src.unlink()


@needs_cc
def test_planted_shared_object_is_never_loaded(cache_dir, tmp_path):
    source = _source(f"planted {time.time_ns()}")
    key = fusion.cache_key(source)
    entry = tmp_path / "cache" / "kernels" / key
    marker = tmp_path / "marker"
    DiskCache("kernels").directory  # noqa: B018 - make the directory, as a first run would
    # 1. a file at the predictable name, without a recorded hash
    _plant(entry, marker, 666)
    fn = fusion.build_kernel(source)
    assert _call(fn) == 7 and not marker.exists()
    # the planted object was replaced by the real build
    assert DiskCache("kernels").read(key) is not None
    # 2. a planted object replacing a verified entry (the recorded hash no longer matches)
    _plant(entry, marker, 666)
    fn = fusion.build_kernel(source)
    assert _call(fn) == 7 and not marker.exists()


@needs_cc
def test_what_is_loaded_is_what_was_verified(cache_dir, tmp_path):
    # the bytes the cache verified are loaded from a once-used copy, never the entry by name
    # (which could change after the check), and two kernels never share a loaded library
    sources = [_source(f"copy {k} {time.time_ns()}", result=10 + k) for k in range(3)]
    fns = [fusion.build_kernel(s) for s in sources]
    assert [_call(f) for f in fns] == [10, 11, 12]
    maps = open("/proc/self/maps").read() if os.path.exists("/proc/self/maps") else ""
    for s in sources:
        assert DiskCache("kernels").path(fusion.cache_key(s)) not in maps
    assert not [n for n in os.listdir(DiskCache("kernels").directory) if n.startswith(".tmp")]


def test_directories_are_private_whatever_the_umask(cache_dir):
    old = os.umask(0)
    try:
        cache = DiskCache("umask-test")
        folder = cache.directory
        cache.write("entry", b"data")
    finally:
        os.umask(old)
    assert _mode(cache_dir) == 0o700
    assert _mode(folder) == 0o700
    assert _mode(os.path.join(folder, "entry")) == 0o600
    assert _mode(os.path.join(folder, "entry.sha256")) == 0o600


@needs_cc
def test_compiled_loop_cache_is_private_under_umask_000(tmp_path):
    root = tmp_path / "c"
    code = ("import os; os.umask(0)\n"
            "from ember_cpu import fusion\n"
            f"fusion.build_kernel({_source('umask')!r})\n")
    env = dict(os.environ, EMBER_CACHE_DIR=str(root))
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert _mode(root) == 0o700 and _mode(root / "kernels") == 0o700
    for f in (root / "kernels").iterdir():
        assert _mode(f) == 0o600, f


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722, 0o1777])
def test_writable_by_others_is_refused(cache_dir, mode):
    cache_dir.mkdir()
    os.chmod(cache_dir, mode)
    with pytest.raises(CacheDirectoryError, match=str(cache_dir)) as e:
        DiskCache("kernels").read("entry")
    assert f"{mode & 0o7777:04o}" in str(e.value) and "EMBER_CACHE_DIR" in str(e.value)


@needs_cc
def test_world_writable_cache_dir_refused_by_the_cpu_backend(cache_dir):
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o777)
    with pytest.raises(CacheDirectoryError, match="refusing the cache directory"):
        fusion.build_kernel(_source("refused"))


def test_group_writable_subdirectory_is_refused(cache_dir):
    folder = DiskCache("kernels").directory
    os.chmod(folder, 0o770)
    with pytest.raises(CacheDirectoryError, match=folder):
        DiskCache("kernels").write("entry", b"x")


def test_directory_of_another_user_is_refused(cache_dir, monkeypatch):
    cache_dir.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(cache_dir, 65534, -1)  # nobody
    else:
        monkeypatch.setattr(disk_cache, "_uid", lambda: os.geteuid() + 1)
    with pytest.raises(CacheDirectoryError, match="owned by uid") as e:
        DiskCache("kernels").directory  # noqa: B018
    assert str(cache_dir) in str(e.value)


def test_symlinked_entry_is_not_followed(cache_dir, tmp_path):
    cache = DiskCache("links")
    cache.write("entry", b"good")
    target = tmp_path / "elsewhere"
    target.write_bytes(b"good")
    os.unlink(cache.path("entry"))
    os.symlink(target, cache.path("entry"))
    assert cache.read("entry") is None


@needs_cc
@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "other_library",
                                    "no_sidecar", "garbage_sidecar"])
def test_damaged_compiled_loop_is_rebuilt(cache_dir, damage):
    source = _source(f"damage {damage} {time.time_ns()}")
    key = fusion.cache_key(source)
    assert _call(fusion.build_kernel(source)) == 7
    entry = DiskCache("kernels").path(key)
    data = open(entry, "rb").read()
    if damage == "truncated":
        open(entry, "wb").write(data[:len(data) // 2])
    elif damage == "empty":
        open(entry, "wb").close()
    elif damage == "garbage":
        open(entry, "wb").write(os.urandom(len(data)))
    elif damage == "other_library":  # a valid ELF, not the one that was built
        other = _source("other", result=3)
        open(entry, "wb").write(DiskCache("kernels").read(fusion.cache_key(other))
                                or fusion._compile(other))
    elif damage == "no_sidecar":
        os.unlink(entry + ".sha256")
    else:
        open(entry + ".sha256", "wb").write(b"\x00garbage")
    assert _call(fusion.build_kernel(source)) == 7
    assert DiskCache("kernels").read(key) is not None  # healed for the next process


def _other_device_dirs():
    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        return None
    scratch = tempfile.mkdtemp()
    shm = tempfile.mkdtemp(dir="/dev/shm")
    if os.stat(scratch).st_dev == os.stat(shm).st_dev:
        shutil.rmtree(scratch), shutil.rmtree(shm)
        return None
    return scratch, shm


@needs_cc
def test_cache_on_another_file_system_than_tmpdir(monkeypatch):
    dirs = _other_device_dirs()
    if dirs is None:
        pytest.skip("no second file system (/dev/shm) to put the cache on")
    scratch, shm = dirs
    try:
        monkeypatch.setenv("TMPDIR", scratch)
        monkeypatch.setattr(tempfile, "tempdir", scratch)
        monkeypatch.setenv("EMBER_CACHE_DIR", os.path.join(shm, "cache"))
        source = _source(f"crossdev {time.time_ns()}")
        assert _call(fusion.build_kernel(source)) == 7
        assert DiskCache("kernels").read(fusion.cache_key(source)) is not None
    finally:
        shutil.rmtree(scratch), shutil.rmtree(shm)


def test_temporaries_of_dead_writers_are_removed(cache_dir):
    folder = DiskCache("sweep").directory
    stale = os.path.join(folder, ".tmp-1-deadbeef")
    fresh = os.path.join(folder, ".tmp-2-cafe")
    for p in (stale, fresh):
        open(p, "wb").write(b"partial")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    DiskCache("sweep").directory  # noqa: B018 - a new process's first use sweeps
    assert not os.path.exists(stale) and os.path.exists(fresh)


def test_entry_names_cannot_leave_the_directory(cache_dir):
    for bad in ("../x", "a/b", ".hidden", "x.sha256", ""):
        with pytest.raises(ValueError):
            DiskCache("names").write(bad, b"x")


# -- OpenCL program binaries ---------------------------------------------------------------
def _state():
    import ember
    if not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    return ember.opencl._backend._devices.state(0)


_CL_SRC = "__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2.0f; }\n"


def _run_twice(prg, state):
    import numpy as np
    import pyopencl as cl
    host = np.arange(4, dtype=np.float32)
    buf = cl.Buffer(state.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=host)
    q = cl.CommandQueue(state.context)
    prg.twice(q, (4,), None, buf)
    cl.enqueue_copy(q, host, buf)
    q.finish()
    return host.tolist()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "forged_hash"])
def test_damaged_opencl_binary_is_rebuilt(cache_dir, damage):
    state = _state()
    from ember_opencl import binaries
    src = _CL_SRC + f"// {damage} {time.time_ns()}\n"
    key = binaries.cache_key(state.device, src, [])
    prg = binaries.build(state.context, state.device, src, [])
    assert _run_twice(prg, state) == [0, 2, 4, 6]
    cache = DiskCache("opencl")
    good = cache.read(key)
    assert good
    if damage == "garbage":
        open(cache.path(key), "wb").write(os.urandom(len(good)))
    elif damage == "truncated":
        open(cache.path(key), "wb").write(good[:len(good) // 3])
    else:  # bytes whose hash is recorded but the driver refuses
        cache.write(key, os.urandom(256))
    prg = binaries.build(state.context, state.device, src, [])
    assert _run_twice(prg, state) == [0, 2, 4, 6]
    assert cache.read(key) is not None and cache.read(key)[:16] == good[:16]


def test_opencl_programs_come_from_the_verified_cache(cache_dir):
    state = _state()
    from ember_opencl import binaries, codegen
    src = _CL_SRC + f"// reuse {time.time_ns()}\n"
    codegen.compile_program(state, src, "a test program")
    assert DiskCache("opencl").read(binaries.cache_key(state.device, src, [])) is not None
    calls = []
    import pyopencl as cl
    real = cl.Program

    def spy(*args, **kw):
        calls.append(len(args))
        return real(*args, **kw)
    import unittest.mock
    with unittest.mock.patch.object(cl, "Program", spy):
        prg = codegen.compile_program(state, src, "a test program")
    assert calls == [3]  # (context, devices, binaries): no source build
    assert _run_twice(prg, state) == [0, 2, 4, 6]


def test_opencl_refuses_a_world_writable_cache_dir(tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o777)
    code = ("import ember\n"
            "if not ember.opencl.is_available(): raise SystemExit(3)\n"
            "x = ember.ones(3, device='opencl')\n"
            "(x * 2).cpu()\n")
    env = dict(os.environ, EMBER_CACHE_DIR=str(root))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True)
    if proc.returncode == 3:
        pytest.skip("no OpenCL device")
    assert proc.returncode != 0
    assert "refusing the cache directory" in proc.stderr and str(root) in proc.stderr



def test_cupy_kernel_cache_goes_to_the_private_directory(cache_dir):
    cupy_api = pytest.importorskip("ember_cuda.cupy_api")
    env = {}
    cupy_api.use_private_kernel_cache(env)
    assert env["CUPY_CACHE_DIR"] == DiskCache("cupy").directory
    assert _mode(env["CUPY_CACHE_DIR"]) == 0o700
    chosen = {"CUPY_CACHE_DIR": "/somewhere/the/user/chose"}
    cupy_api.use_private_kernel_cache(chosen)
    assert chosen["CUPY_CACHE_DIR"] == "/somewhere/the/user/chose"


def test_pocl_kernel_cache_goes_to_the_private_directory(tmp_path):
    pytest.importorskip("pyopencl")
    code = ("import os, ember\n"
            "ember.opencl.is_available()\n"
            "print(os.environ.get('POCL_CACHE_DIR'))\n")
    env = {k: v for k, v in os.environ.items() if k != "POCL_CACHE_DIR"}
    env["EMBER_CACHE_DIR"] = str(tmp_path / "c")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == str(tmp_path / "c" / "pocl")
    assert _mode(out) == 0o700
