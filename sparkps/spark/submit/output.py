"""A job's output under spark-submit: in order, and whole up to its last line.

spark-submit runs a Python job as a child of the JVM with stdout and stderr merged into one pipe, which a
daemon thread of the JVM copies to the console in 1 KiB pieces.  Two things follow:

- Python block-buffers a pipe, so the job's prints reached the console only when it exited, after every
  log line written meanwhile to stderr (line-buffered);
- the JVM exits as soon as the Python process has, stopping the copying thread wherever it is: what the job
  wrote last (its final message) could be cut off mid-sentence.

So jobs make stdout line-buffered at start (``line_buffered_output``) and, before they exit, flush and wait
until the reader has taken every byte they wrote (``drain_output``).

    line_buffered_output()
    try:
        code = run(args)
    finally:
        drain_output()

The parameter server's own log lines (the scheduler's, a server's, a worker's) are silenced in a job, which
reports a failure once itself (``quiet_parameter_server``).

An ``--output`` that is a store's URI (``hdfs://``, ``s3a://``, ``viewfs://``) is written in place through Spark's
Hadoop file systems (sparkps.spark.model.storage): object stores have no rename, so there is no staging sibling;
it is checked once the session is up (``prepare_store_output``: an existing non-empty folder needs ``--overwrite``,
which removes it then), the job's files go through ``write_output_file`` and ``summary.json``, written last, marks a
complete output. Nothing is written on the local disk for it.
"""
import array
import contextlib
import logging
import os
import shutil
import stat
import sys
import time

DRAIN_SECONDS = 10.0
AFTER_READ_SECONDS = 0.1     # time for the reader to pass on what it has just read
# the loggers of the parameter server's packages (the scheduler runs in the driver)
PS_LOGGERS = ("sparkps.comm", "sparkps.scheduler", "sparkps.server", "sparkps.worker")


def quiet_parameter_server(level=logging.CRITICAL):
    """Set the parameter server's loggers to ``level``: a job reports a failure once, itself."""
    for name in PS_LOGGERS:
        logging.getLogger(name).setLevel(level)


def line_buffered_output(stream=None):
    """Make ``stream`` (default sys.stdout) write each line as it is printed, also into a pipe."""
    stream = stream or sys.stdout
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(line_buffering=True)


def drain_output(streams=None, timeout=DRAIN_SECONDS, poll=0.01):
    """Flush ``streams`` (default stdout and stderr) and, for those that are pipes, wait until the reader
    holds every byte written to them (the pipe is empty), then ``AFTER_READ_SECONDS`` more.  Blocks at most
    ``timeout`` s (a reader that stopped reading does not keep the job alive); returns the bytes still
    unread then (0: all read)."""
    streams = [s for s in (streams or (sys.stdout, sys.stderr)) if s is not None]
    descriptors = set()
    for stream in streams:
        try:
            stream.flush()
            descriptors.add(stream.fileno())
        except (OSError, ValueError, AttributeError):     # closed, or not a real file
            continue
    pipes = [fd for fd in descriptors if _is_pipe(fd)]
    if not pipes:
        return 0
    deadline = time.monotonic() + timeout
    unread = sum(unread_bytes(fd) for fd in pipes)
    waited = False
    while unread and time.monotonic() < deadline:
        time.sleep(poll)
        waited = True
        unread = sum(unread_bytes(fd) for fd in pipes)
    if waited and not unread:
        time.sleep(AFTER_READ_SECONDS)
    return unread


def unread_bytes(fd):
    """Bytes written to the pipe ``fd`` (either end) that its reader has not read yet; 0 where the
    system cannot say."""
    try:
        import fcntl
        import termios
        count = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, count, True)
        return int(count[0])
    except (ImportError, OSError):
        return 0


def _is_pipe(fd):
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def check_output_folder(path, overwrite):
    """Raise ConfigError when ``path`` is a non-empty folder (or a file) and ``overwrite`` is false: a job never
    replaces a model it was not told to.  Called before Spark starts."""
    from sparkps.errors import ConfigError
    if on_store(path):
        return       # checked once a session reaches the store: prepare_store_output
    if os.path.isfile(path):
        raise ConfigError("--output %s is a file, not a folder" % path)
    if os.path.isdir(path) and os.listdir(path) and not overwrite:
        raise ConfigError("--output %s exists and is not empty: pass --overwrite to replace it, or choose "
                          "another folder" % path)
    folder = os.path.dirname(os.path.abspath(path))        # the job writes a sibling of path, then renames it
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise ConfigError("--output %s: %s is a file, not a folder" % (path, folder))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError("--output %s: the folder %s is not writable" % (path, folder))


@contextlib.contextmanager
def staged_output(path):
    """Yield a fresh temporary sibling of ``path`` (``.NAME.partial-PID``) to write the job's output into; when
    the block ends normally the sibling replaces ``path`` (the previous folder is renamed aside, then removed),
    otherwise the sibling is removed and ``path`` is left as it was.  A run killed meanwhile leaves only the
    sibling behind, never a half-written ``path``. A folder where the sibling cannot be made is a ConfigError naming
    ``path`` and the cause. A store's URI is yielded as it is (see the module docstring)."""
    if on_store(path):
        yield path
        return
    given, path = path, os.path.abspath(path)
    parent, name = os.path.split(path)
    staging = os.path.join(parent, ".%s.partial-%d" % (name, os.getpid()))
    try:
        os.makedirs(parent, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
    except OSError as exc:      # named as the user gave it, not by the sibling (a /proc or read-only folder)
        from sparkps.errors import ConfigError
        raise ConfigError("--output %s cannot be written: %s (in %s)" % (given, exc.strerror or exc, parent)) \
            from None
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    previous = os.path.join(parent, ".%s.previous-%d" % (name, os.getpid()))
    if os.path.exists(path):
        os.rename(path, previous)
    os.rename(staging, path)
    shutil.rmtree(previous, ignore_errors=True)


def on_store(path):
    """True when ``path`` is a store's URI (not a plain path, not ``file:``): the job writes it through Spark."""
    from sparkps.spark.model.storage import is_uri
    return is_uri(path)


def output_path(folder, *parts):
    """The path of ``parts`` in the job's output ``folder``: absolute on the local disk, a URI on a store."""
    if on_store(folder):
        return "/".join([str(folder).rstrip("/")] + [str(p).strip("/") for p in parts])
    return os.path.join(os.path.abspath(folder), *parts)


def prepare_store_output(spark, path, overwrite):
    """For an ``--output`` on a store (nothing otherwise): ConfigError naming it when no file system of ``spark``
    reaches it, or when it is a file, or a non-empty folder and ``overwrite`` is false; with ``overwrite`` the old
    folder is removed now (a store has no rename to swap it in at the end). Blocks on the store."""
    from sparkps.errors import ConfigError
    from sparkps.spark.model.storage import files_for
    if not on_store(path):
        return
    files = files_for(path, spark)
    if files.exists(path) and not files.isdir(path):
        raise ConfigError("--output %s is a file, not a folder" % path)
    if files.isdir(path) and files.listdir(path):
        if not overwrite:
            raise ConfigError("--output %s exists and is not empty: pass --overwrite to replace it, or choose "
                              "another folder" % path)
        files.delete(path)
    files.makedirs(path)


def write_output_file(folder, name, data, spark=None):
    """Write ``data`` (bytes or str) as the file ``name`` of the job's output ``folder``: with Python's file I/O on
    the local disk, through Spark's Hadoop file systems (``spark``, else the active session) on a store."""
    data = data.encode("utf-8") if isinstance(data, str) else data
    if on_store(folder):
        from sparkps.spark.model.storage import files_for
        target = output_path(folder, name)
        files_for(target, spark).write_bytes(target, data)
        return
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
