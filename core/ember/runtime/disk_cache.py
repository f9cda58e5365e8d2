"""On-disk caches of built artefacts (compiled kernels, program binaries) that no other local
user can plant code in, and that heal when an entry is damaged.

Every cache ember keeps on disk is a ``DiskCache``: a subdirectory of the cache root
(``$EMBER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ember``, else ``~/.cache/ember``; when none of these
can be created, ``<tempdir>/ember-<uid>``). The rules:

* a directory ember creates is made 0700, whatever the umask;
* a directory is refused (``CacheDirectoryError``, naming it) when another user owns it or
  its group or others may write to it -- a user-given ``EMBER_CACHE_DIR`` included -- because
  whoever can write there could replace an artefact ember is about to load;
* each entry's sha256 is recorded in a sidecar (``<entry>.sha256``) in the same private
  directory when this user builds it, and ``read`` returns an entry's bytes only when they match
  it. An entry without a sidecar (planted), or a truncated, empty, garbage or mismatched one is
  removed and reported missing, so the caller rebuilds it instead of failing;
* entries and sidecars are written to a temporary file in the same directory, fsynced and
  renamed over the old name: atomic on any file system (the temporary never crosses one).

Callers load the bytes ``read`` verified, not the entry again by name; a loader that needs a
path (``dlopen``) gets a fresh, once-used file of those bytes in the private directory
(``private_copy``), so what runs is what was checked.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import stat
import tempfile
import time

_log = logging.getLogger("ember.kernels")

__all__ = ["DiskCache", "CacheDirectoryError", "cache_root"]

_ENV = "EMBER_CACHE_DIR"
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
_SIDE = ".sha256"
_TMP_PREFIX = ".tmp-"
_STALE_TMP_S = 3600  # a temporary file this old belongs to a writer that died
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class CacheDirectoryError(PermissionError):
    """A cache directory ember will not use: owned by another user, writable by others, or not
    a directory."""


def _uid():
    return os.geteuid() if hasattr(os, "geteuid") else None


def cache_root():
    """(the root directory of ember's on-disk caches, whether the user chose it)."""
    given = os.environ.get(_ENV)
    if given:
        return os.path.abspath(os.path.expanduser(given)), True
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "ember"), False


def _fallback_root():
    uid = _uid()
    return os.path.join(tempfile.gettempdir(), f"ember-{uid if uid is not None else 'cache'}")


def _private_dir(path, what):
    """Create ``path`` 0700 when missing (parents as makedirs makes them), then check it."""
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask; 0700 needs no widening
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return _private_dir(path, what)
    _check_dir(path, what)


def _check_dir(path, what):
    st = os.stat(path)  # follows a symlink: what matters is the directory written into
    if not stat.S_ISDIR(st.st_mode):
        raise CacheDirectoryError(f"ember: the cache directory {path!r} ({what}) is not a "
                                  f"directory")
    uid = _uid()
    if uid is None:
        return
    if st.st_uid != uid:
        raise CacheDirectoryError(
            f"ember: refusing the cache directory {path!r} ({what}): it is owned by uid "
            f"{st.st_uid}, not by this user (uid {uid}); another user could put code there "
            f"that ember would load. Set {_ENV} to a directory of your own.")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheDirectoryError(
            f"ember: refusing the cache directory {path!r} ({what}): its mode "
            f"{stat.S_IMODE(st.st_mode):04o} lets other users write to it, so they could "
            f"replace what ember loads from it. Make it private (chmod 700 {path!r}) or set "
            f"{_ENV} to a directory of your own.")


def _read_nofollow(path):
    """The bytes of the regular file ``path`` (not through a symlink), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _BINARY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _write_new_file(folder, data, suffix="", sync=False):
    """``data`` in a new file of ``folder`` (0600, a name never used before, not through a
    symlink); its path. A failure leaves no file behind."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    path = os.path.join(folder, f"{_TMP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}{suffix}")
    fd = os.open(path, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        _unlink(path)
        raise
    return path


def _write_atomically(folder, name, data):
    """``data`` into ``folder/name``: temporary file in ``folder``, fsync, rename."""
    tmp = _write_new_file(folder, data, sync=True)
    try:
        os.replace(tmp, os.path.join(folder, name))
    except BaseException:
        _unlink(tmp)
        raise


class DiskCache:
    """One on-disk cache: ``name`` is its subdirectory of the cache root (``kernels`` for the
    CPU backend's compiled loops, ``opencl`` for OpenCL program binaries, ...)."""

    def __init__(self, name):
        if not _NAME_RE.match(name) or name in (".", ".."):
            raise ValueError(f"DiskCache: invalid cache name {name!r}")
        self.name = name
        self._swept = set()

    @property
    def directory(self):
        """This cache's directory, created private and checked (``CacheDirectoryError`` when
        it is not safe to load from)."""
        root, given = cache_root()
        if given:
            _private_dir(root, f"${_ENV}")
        else:
            try:
                _private_dir(root, "ember's cache root")
            except CacheDirectoryError:
                raise
            except OSError:  # no writable home: a private directory in the temp dir
                root = _fallback_root()
                _private_dir(root, "ember's cache root in the temp directory")
        path = os.path.join(root, self.name)
        _private_dir(path, f"the {self.name!r} cache")
        if path not in self._swept:
            self._swept.add(path)
            self._remove_stale_temporaries(path)
        return path

    @staticmethod
    def _check_key(key):
        if not _NAME_RE.match(key) or key.startswith(".") or key.endswith(_SIDE):
            raise ValueError(f"DiskCache: invalid entry name {key!r} (letters, digits, '_', "
                             f"'-', '.')")

    def path(self, key):
        """Where entry ``key`` is stored (for tests and tools; load through ``read``)."""
        self._check_key(key)
        return os.path.join(self.directory, key)

    def read(self, key):
        """Entry ``key``'s bytes when their sha256 matches the one recorded when this user
        wrote it; else None (a damaged or planted entry is removed: rebuild and ``write``)."""
        self._check_key(key)
        folder = self.directory
        entry = os.path.join(folder, key)
        recorded = _read_nofollow(entry + _SIDE)
        data = _read_nofollow(entry)
        if data is not None and recorded is not None and \
                recorded.strip() == hashlib.sha256(data).hexdigest().encode():
            return data
        if data is not None or recorded is not None:
            _unlink(entry)
            _unlink(entry + _SIDE)
        return None

    def write(self, key, data):
        """Store ``data`` as entry ``key`` and record its sha256 (both writes atomic)."""
        self._check_key(key)
        data = bytes(data)
        folder = self.directory
        # the entry first: a sidecar never vouches for bytes that are not complete on disk
        _write_atomically(folder, key, data)
        _write_atomically(folder, key + _SIDE, hashlib.sha256(data).hexdigest().encode())

    def get_or_build(self, key, build):
        """The verified bytes of ``key``, or ``build()``'s, stored for the next process."""
        data = self.read(key)
        if data is None:
            data = build()
            self.write(key, data)
        else:
            _log.debug("%s: found in the disk cache (%s)", key, self.directory)
        return data

    @contextlib.contextmanager
    def private_copy(self, data, suffix=""):
        """A new file in this cache's private directory holding ``data``, for loaders that
        need a path (``dlopen``): its name is used once, and it is removed on exit."""
        path = _write_new_file(self.directory, data, suffix)
        try:
            yield path
        finally:
            _unlink(path)

    def _remove_stale_temporaries(self, folder):
        now = time.time()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for e in entries:
            if e.name.startswith(_TMP_PREFIX):
                try:
                    if now - e.stat(follow_symlinks=False).st_mtime > _STALE_TMP_S:
                        _unlink(e.path)
                except OSError:
                    pass

    def __repr__(self):
        return f"DiskCache({self.name!r})"
