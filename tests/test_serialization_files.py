"""ember.save's files: temporary files of killed writers are cleaned up, tensor bytes carry
checksums, saved files get the umask's mode."""
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember.serialization import _files

posix_only = pytest.mark.skipif(os.name != "posix", reason="pids and modes are POSIX here")


def _temp_files(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith(".ember-save."))


@posix_only
def _stalled_writer(path, rows):
    """A child saving ``rows`` x 1024 float32 to ``path`` that stops once the temporary file is
    complete but not yet renamed (the worst moment to be killed: it leaves a checkpoint-sized
    file); it prints "written" then."""
    script = textwrap.dedent(f"""
        import os, time
        import ember
        def stall(fd):
            print("written", flush=True)
            time.sleep(120)
        os.fsync = stall
        ember.save({{"w": ember.ones({rows}, 1024)}}, {str(path)!r})
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_save_killed_mid_write_is_cleaned_up_by_the_next_save(tmp_path):
    child = _stalled_writer(tmp_path / "ckpt.ember", 1024)  # 4 MB, then SIGKILL
    try:
        line = child.stdout.readline()
        assert line.strip() == "written", child.stderr.read()
        leftovers = _temp_files(tmp_path)
        assert len(leftovers) == 1 and f".{child.pid}." in leftovers[0]
        # a running writer's file is not stale: a save now leaves it alone
        ember.save({"x": ember.ones(1)}, tmp_path / "other.ember")
        assert _temp_files(tmp_path) == leftovers
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert os.path.getsize(tmp_path / leftovers[0]) >= 4 * 1024 * 1024
    assert not (tmp_path / "ckpt.ember").exists()  # never a half-written checkpoint
    ember.save({"x": ember.zeros(1)}, tmp_path / "other.ember")
    assert _temp_files(tmp_path) == []
    assert ember.load(tmp_path / "other.ember")["x"].tolist() == [0.0]


@posix_only
def test_only_stale_temp_files_of_this_host_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    host = _files._host_tag()
    names = {
        "dead": f".ember-save.{host}.{dead.pid}.abc123.tmp",
        "alive": f".ember-save.{host}.{alive.pid}.abc123.tmp",
        "mine": f".ember-save.{host}.{os.getpid()}.abc123.tmp",
        "other_host": f".ember-save.elsewhere-{host}.{dead.pid}.abc123.tmp",
        "unrelated": f".ember-save-{dead.pid}.tmp",
    }
    try:
        for n in names.values():
            (tmp_path / n).write_bytes(b"x" * 100)
        assert _files.remove_stale_temp_files(tmp_path) == [names["dead"]]
        assert sorted(os.listdir(tmp_path)) == sorted(v for k, v in names.items()
                                                      if k != "dead")
    finally:
        alive.kill()
        alive.wait()


@posix_only
def test_a_killed_writer_not_yet_reaped_is_cleaned_up(tmp_path):
    # issue #36: the killed writer is a zombie until its parent waits for it; its pid still
    # "exists", but it will never finish the save
    child = _stalled_writer(tmp_path / "ckpt.ember", 512)
    try:
        assert child.stdout.readline().strip() == "written", child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        for _ in range(200):  # the kernel makes it a zombie (not reaped: no wait() here)
            with open(f"/proc/{child.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.05)
        assert len(_temp_files(tmp_path)) == 1
        ember.save({"x": ember.zeros(1)}, tmp_path / "ckpt.ember")  # the next save there
        assert _temp_files(tmp_path) == []
    finally:
        child.kill()
        child.wait()


@posix_only
def test_a_temp_file_whose_pid_was_reused_is_cleaned_up(tmp_path):
    host = _files._host_tag()
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        name = f".ember-save.{host}.{later.pid}.abc123.tmp"
        (tmp_path / name).write_bytes(b"x" * 100)
        hour_ago = time.time() - 3600  # written before that process existed
        os.utime(tmp_path / name, (hour_ago, hour_ago))
        assert _files.remove_stale_temp_files(tmp_path) == [name]
    finally:
        later.kill()
        later.wait()


@posix_only
@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002, 0o077])
def test_saved_files_follow_the_umask(tmp_path, umask, monkeypatch):
    seen = {}
    real_fsync = os.fsync

    def spy(fd):  # first the temporary file, while it is being written; then the directory
        seen.setdefault("tmp", [(n, os.stat(tmp_path / n).st_mode & 0o777)
                                for n in _temp_files(tmp_path)])
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    old = os.umask(umask)
    try:
        ember.save({"w": ember.ones(2)}, tmp_path / "a.ember")
        with open(tmp_path / "b.bin", "wb") as f:  # "like any other file"
            f.write(b"x")
    finally:
        os.umask(old)
    want = 0o666 & ~umask
    assert os.stat(tmp_path / "a.ember").st_mode & 0o777 == want
    assert os.stat(tmp_path / "b.bin").st_mode & 0o777 == want
    [(name, mode)] = seen["tmp"]
    assert _files._TMP_RE.match(name) and mode == want


@posix_only
def test_overwriting_keeps_the_mode_and_writes_through_symlinks(tmp_path):
    target = tmp_path / "real.ember"
    ember.save({"v": 1}, target)
    os.chmod(target, 0o640)
    link = tmp_path / "link.ember"
    link.symlink_to(target)
    ember.save({"v": 2}, link)
    assert link.is_symlink() and ember.load(target) == {"v": 2}
    assert os.stat(target).st_mode & 0o777 == 0o640


def test_missing_parent_directory(tmp_path):
    with pytest.raises(RuntimeError, match=r"Parent directory .*nowhere does not exist\."):
        ember.save({"a": 1}, tmp_path / "nowhere" / "x.ember")


def _flip(path, offset_in_data):
    raw = bytearray(path.read_bytes())
    (n,) = struct.unpack("<Q", raw[:8])
    raw[8 + n + offset_in_data] ^= 0x01
    path.write_bytes(bytes(raw))
    return json.loads(raw[8:8 + n])


def test_a_flipped_bit_in_tensor_data_names_the_tensor(tmp_path):
    path = tmp_path / "c.ember"
    ember.save({"a": ember.zeros(4), "w": ember.arange(100.0)}, path)
    header = _flip(path, 0)
    name = next(k for k, v in header.items() if k != "__metadata__" and
                v["data_offsets"][0] == 0)
    assert name == "t0"
    with pytest.raises(ValueError, match=r"c\.ember' is corrupted: the data of tensor "
                                         r"obj\['a'\] \(t0\) fails its checksum \(CRC-32 "
                                         r"0x[0-9a-f]{8} stored, 0x[0-9a-f]{8} read\)"):
        ember.load(path)
    # the other tensor is intact; the crc is in the header, per tensor
    info = json.loads(header["__metadata__"]["tensors"])
    assert set(info) == {"t0", "t1"} and all("crc32" in v for v in info.values())


def test_a_flipped_bit_in_the_pickle_is_an_error(tmp_path):
    path = tmp_path / "p.ember"
    ember.save({"s": {1, 2}, "w": ember.ones(3)}, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    _flip(path, header["pickle"]["data_offsets"][0] + 3)
    with pytest.raises(ValueError, match="the data of the pickled object fails its checksum"):
        ember.load(path)


def test_checksums_cover_every_dtype_and_device_tensor(tmp_path):
    import zlib
    tensors = {d.name: ember.ones(3, dtype=d) for d in (
        ember.bool, ember.uint8, ember.int64, ember.float16, ember.bfloat16, ember.complex64,
        ember.complex128)}
    tensors["t"] = ember.arange(6.0).reshape(2, 3).t()  # saved contiguous
    path = tmp_path / "d.ember"
    ember.save(tensors, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    info = json.loads(header["__metadata__"]["tensors"])
    for name, v in info.items():
        b, e = header[name]["data_offsets"]
        assert zlib.crc32(raw[8 + n + b:8 + n + e]) == v["crc32"]
    out = ember.load(path)
    np.testing.assert_array_equal(out["t"].numpy(), np.arange(6.0).reshape(2, 3).T)
