"""Where every compiled kernel of sparkps (numba, ``cache=True``) is kept, and the decorator that compiles them all:
the servers' (``rows.kernels``) and the workers' (``train.batch_index``, ``symbol.ops.fused_kernels``).

numba keeps a compiled function beside its source (``__pycache__``) or, where that cannot be written (a read-only
site-packages), in the user's cache folder; with neither writable it refuses to load the module at all, and a
process that cannot reuse a cache compiles every kernel again, for seconds on a loaded machine. sparkps's kernels
are cached in one folder of their own, the first of these that can be written:

1. ``NUMBA_CACHE_DIR`` when set (numba's own setting, which then holds for every numba function of the process);
2. ``$SPARKPS_CACHE_DIR/numba``;
3. ``$XDG_CACHE_HOME/sparkps/numba`` (by default ``~/.cache/sparkps/numba``);
4. ``sparkps-cache-<uid>/numba`` under the temporary folder, made private to this user (numba's cache files are
   pickles: a folder another user could write is never read).

Without any, the kernels compile in each process, uncached, rather than fail. A kernel is compiled once per machine
and source file: numba names each cache entry by the source file's path and checks its contents, so two
installations never share an entry, and an edited source compiles anew.

>>> cache_dir({"SPARKPS_CACHE_DIR": "/nonexistent/file/x"}, temp_root="/nonexistent") is None
True
"""
import os
import stat
import tempfile

import numba


def _usable(folder, private=False):
    """True when ``folder`` exists (created if need be) and this process can write it; ``private``: it must also
    belong to this user and be closed to everyone else."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if private:
            info = os.lstat(folder)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
                return False
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except OSError:
        return False


def cache_dir(environ=None, temp_root=None):
    """The folder the kernels are cached in (see the module docstring), or None when no folder can be written.
    ``environ`` (default ``os.environ``) and ``temp_root`` (default ``tempfile.gettempdir()``) are read only."""
    env = os.environ if environ is None else environ
    if env.get("NUMBA_CACHE_DIR"):
        return env["NUMBA_CACHE_DIR"]
    if env.get("SPARKPS_CACHE_DIR"):
        own = os.path.join(env["SPARKPS_CACHE_DIR"], "numba")
    else:
        base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        own = os.path.join(base, "sparkps", "numba")
    if _usable(own):
        return own
    private = os.path.join(temp_root or tempfile.gettempdir(), "sparkps-cache-%d" % os.getuid())
    if _usable(private, private=True) and _usable(os.path.join(private, "numba")):
        return os.path.join(private, "numba")
    return None


def kernel(**options):
    """``numba.njit(cache=True, **options)``, its cache in :func:`cache_dir` (uncached where that is None).

    Compiles nothing when applied: a kernel is loaded from the cache, or compiled and saved, at its first call
    (``rows.index.warm`` makes that call early, on a thread of its own)."""
    def compile_kernel(function):
        folder = cache_dir()
        if folder is None:
            return numba.njit(cache=False, **options)(function)
        previous = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = folder     # read once, as the cache is set up: other numba functions keep theirs
        try:
            return numba.njit(cache=True, **options)(function)
        finally:
            numba.config.CACHE_DIR = previous
    return compile_kernel
