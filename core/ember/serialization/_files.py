"""Files for ``ember.save`` / ``ember.load``: crash-safe writes and input handling.

A save to a path writes a temporary file next to the target, named
``.ember-save.<host>.<pid>.<random>.tmp``, fsyncs it and renames it over the target (so a reader
sees the old file or the new one, never half of one). The temporary file is created with mode
0o666 minus the umask, like any file ``open()`` creates, and takes the mode of the file it
replaces when there is one. A writer killed mid-save leaves its temporary file behind; every save
into a directory removes the temporary files there whose writer is gone (same host, and the pid
no longer running, a zombie, or reused by a process started after the file was written). Files
of other hosts (a shared file system) and of running processes are left alone.
"""
from __future__ import annotations

import errno
import io
import os
import re
import secrets
import socket

_TMP_RE = re.compile(r"^\.ember-save\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.[0-9a-f]+\.tmp$")


def _host_tag():
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname() or "localhost")[:64] or "host"


def _pid_alive(pid, since=None):
    """Whether process ``pid`` may still be the writer of a temporary file written at ``since``
    (a time.time() value): not when it is gone, a zombie (killed but not yet reaped by its
    parent: it will never write again), or a process started after that time (its pid was
    reused)."""
    if os.name != "posix":
        return True  # no cheap, reliable probe: never treat a file as stale
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a process of another user: look closer below
    except OSError:
        return True
    stat = _proc_stat(pid)
    if stat is None:
        return True
    state, started = stat
    if state in "ZX":
        return False
    return since is None or started is None or started <= since + 1.0


def _proc_stat(pid):
    """(state letter, start time as a time.time() value or None) from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    state = fields[0].decode("ascii", "replace")
    try:
        ticks = int(fields[19])  # field 22, counted after "pid (comm)"
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        return state, boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, IndexError):
        return state, None


def remove_stale_temp_files(folder):
    """Remove ``.ember-save.*.tmp`` files in ``folder`` left by writers of this host that are no
    longer running; returns the names removed."""
    host = _host_tag()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = _TMP_RE.match(name)
        if m is None or m["host"] != host:
            continue
        pid = int(m["pid"])
        if pid == os.getpid():
            continue
        try:
            written = os.stat(os.path.join(folder, name), follow_symlinks=False).st_mtime
        except OSError:
            continue
        if _pid_alive(pid, written):
            continue
        try:
            os.unlink(os.path.join(folder, name))
            removed.append(name)
        except OSError:
            pass  # gone already, or not ours to remove
    return removed


def _open_temp(folder):
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | \
        getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = f".ember-save.{_host_tag()}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
        path = os.path.join(folder, name)
        try:
            # 0o666: the kernel applies the umask, as for any file open() creates
            return path, os.open(path, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "ember.save: could not create a unique temporary file",
                          folder)


def write_atomically(path, write):
    """Call ``write(binary_file)`` on a temporary file next to ``path``, then rename it over
    ``path``. On any failure the temporary file is removed and ``path`` is untouched."""
    path = os.path.realpath(os.fspath(path))  # write through a symlink, as open() would
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    remove_stale_temp_files(folder)
    tmp, fd = _open_temp(folder)
    try:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            if mode is not None:
                os.chmod(tmp, mode)
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


def _fsync_dir(folder):
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse to fsync directories; the rename is still atomic
    finally:
        os.close(fd)


class Source:
    """The file to load: a seekable binary stream plus a label for messages. Paths are opened
    here (and closed by ``close``); a non-seekable stream is read into memory."""

    def __init__(self, f):
        self._owned = None
        if isinstance(f, (str, os.PathLike)):
            path = os.fspath(f)
            self.stream = self._owned = open(path, "rb")
            self.label = repr(path)
        elif hasattr(f, "read"):
            name = getattr(f, "name", None)
            self.label = repr(name) if isinstance(name, (str, bytes)) else "the file object"
            probe = f.read(0)
            if not isinstance(probe, (bytes, bytearray, memoryview)):
                raise TypeError(f"ember.load: the file object must be opened in binary mode "
                                f"(read() returned {type(probe).__qualname__})")
            seekable = getattr(f, "seekable", lambda: False)
            try:
                ok = bool(seekable())
            except Exception:
                ok = False
            self.stream = f if ok else io.BytesIO(f.read())
        else:
            raise TypeError(f"ember.load: f must be a path (str or os.PathLike) or a binary "
                            f"file object with read(), got {type(f).__qualname__}")
        self.start = self.stream.tell()

    def size(self):
        here = self.stream.tell()
        end = self.stream.seek(0, io.SEEK_END)
        self.stream.seek(here)
        return end - self.start

    def read_at(self, offset, n):
        """``n`` bytes at ``offset`` (from the start of the checkpoint) into a new bytearray;
        fewer only at the end of the file."""
        self.stream.seek(self.start + offset)
        buf = bytearray(n)
        got = self.stream.readinto(buf) if hasattr(self.stream, "readinto") else None
        if got is None:
            data = self.stream.read(n)
            buf[:len(data)] = data
            got = len(data)
        while 0 < got < n:  # raw streams may return short reads
            more = self.stream.readinto(memoryview(buf)[got:])
            if not more:
                break
            got += more
        return buf if got == n else buf[:got]

    def close(self):
        if self._owned is not None:
            self._owned.close()
