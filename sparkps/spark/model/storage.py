"""Files by Spark URI: the one place where sparkps reads and writes a model's files, on the store Spark is
configured for.

A path is a Spark URI (``hdfs://``, ``s3a://``, ``abfss://``, ``gs://``, ``viewfs://``, ``file://``) or a plain
path. ``files_for(path, session)`` gives the files object that reaches it:

* ``LocalFiles`` (Python's own file I/O) for a ``file:`` URI and for a plain path that Spark's Hadoop configuration
  resolves to the local file system (``fs.defaultFS`` of ``file:///``, or no classic session at hand);
* ``HadoopFiles`` (Spark's Hadoop ``FileSystem``, through the session's JVM) for every other URI, and for a plain
  path when ``fs.defaultFS`` names another store (``hdfs://nn``), as Spark's own readers resolve it.

A path that Python cannot reach is one ConfigError naming it before anything is written: a URI on a Spark Connect
session (its client has no JVM), with no SparkSession, or of a scheme no Hadoop FileSystem is configured for
(``spark.hadoop.fs.<scheme>.impl`` and the store's jars). Never a local folder named after the scheme.

Both kinds answer the same calls (``join``, ``exists``, ``isdir``, ``listdir``, ``makedirs``, ``delete``,
``read_bytes``, ``write_bytes``, ``open_input``, ``size``, ``put_file``, ``get_file``, ``copy_file``); writes
create each file in place (no rename: object stores have none), so a folder is committed by the file written last
(a manifest, ``metadata.json``) naming the others. Every call blocks on the file system.
"""
import io
import os
import re
import shutil

from sparkps.errors import ConfigError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
CHUNK_BYTES = 4 << 20        # bytes per call when a HadoopFiles stream is read from or written to Python


def scheme_of(path):
    """The URI scheme of ``path`` in lower case (``"hdfs"``, ``"file"``), or None for a plain path."""
    found = _SCHEME.match(str(path))
    return found.group(1).lower() if found else None


def strip_file_scheme(path):
    """The local path of a ``file:`` URI (``file:///a``, ``file:/a``); any other path as given."""
    path = str(path)
    if scheme_of(path) != "file":
        return path
    rest = path[len("file:"):]
    if rest.startswith("//"):
        rest = rest[2:]
        if not rest.startswith("/"):          # file://host/a: the host part is dropped, as Hadoop does
            rest = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return rest


def is_uri(path):
    """True when ``path`` names a scheme other than ``file:`` (a store Python's ``open()`` cannot reach)."""
    scheme = scheme_of(path)
    return scheme is not None and scheme != "file"


def files_for(path, session=None):
    """The files object (``LocalFiles`` or ``HadoopFiles``) that reaches ``path`` (see the module docstring);
    ``session`` the SparkSession whose Hadoop configuration it uses (None: the active one, if any). ConfigError
    naming ``path`` when Python cannot reach it. Blocks on resolving the store (a JVM call) for a URI."""
    from sparkps.spark.common.session import is_connect
    if scheme_of(path) == "file":
        return LocalFiles()
    session = session if session is not None else _active_session()
    if session is not None and is_connect(session):
        if is_uri(path):
            raise ConfigError("%s: a Spark Connect session reads and writes a model's files from this Python "
                              "process, which cannot reach a %s:// store (no JVM here); save to a path this machine "
                              "mounts, or save from a classic session" % (path, scheme_of(path)))
        return LocalFiles()
    if session is None:
        if is_uri(path):
            raise ConfigError("%s: a %s:// path is read and written through Spark's Hadoop file systems, and no "
                              "SparkSession is active; start one (SparkSession.builder.getOrCreate()) first"
                              % (path, scheme_of(path)))
        return LocalFiles()
    files = HadoopFiles(session, path)
    return LocalFiles() if files.scheme == "file" else files


def recorded_files(folder, session=None):
    """The files object of a folder sparkps recorded itself (a model's ``tables_folder``, ``saved_path``): a folder on
    a Hadoop store is recorded by its full URI, so a plain path is always local (a staging folder of this machine)
    whatever ``fs.defaultFS`` says."""
    return files_for(folder, session) if is_uri(folder) else LocalFiles()


def _active_session():
    from pyspark.sql import SparkSession
    return SparkSession.getActiveSession()


class LocalFiles:
    """Files of the local (or mounted) file system, with Python's file I/O. Every executor's Python reads them too
    when the folder is shared (``python_reads``)."""

    on_local_disk = True        # symbolic links are resolved when a listed path is checked (rows.shards)

    scheme = "file"
    python_reads = True          # a Python worker on an executor opens these paths with open()

    def local(self, path):
        """The path Python's ``open()`` takes."""
        return strip_file_scheme(path)

    def qualified(self, path):
        """The absolute local path of ``path``."""
        return os.path.abspath(self.local(path))

    def join(self, path, *parts):
        return os.path.join(self.local(path), *parts)

    def exists(self, path):
        return os.path.lexists(self.local(path))

    def isdir(self, path):
        return os.path.isdir(self.local(path))

    def listdir(self, path):
        """The names in folder ``path``, sorted."""
        return sorted(os.listdir(self.local(path)))

    def makedirs(self, path):
        os.makedirs(self.local(path), exist_ok=True)

    def delete(self, path):
        """Remove the file or folder at ``path``; nothing when absent."""
        target = self.local(path)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        elif os.path.lexists(target):
            os.remove(target)

    def size(self, path):
        return os.path.getsize(self.local(path))

    def read_bytes(self, path):
        with open(self.local(path), "rb") as f:
            return f.read()

    def write_bytes(self, path, data):
        target = self.local(path)
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)

    def open_input(self, path):
        """A seekable binary file object of ``path``."""
        return open(self.local(path), "rb")

    def put_file(self, local_file, path):
        """Copy the local file ``local_file`` to ``path``."""
        os.makedirs(os.path.dirname(os.path.abspath(self.local(path))), exist_ok=True)
        shutil.copyfile(local_file, self.local(path))

    def get_file(self, path, local_file):
        """Copy ``path`` to the local file ``local_file``."""
        shutil.copyfile(self.local(path), local_file)

    def copy_file(self, source, path):
        """Copy the file ``source`` (a path of this store) to ``path``."""
        self.put_file(self.local(source), path)


class HadoopFiles:
    """Files of a store reached through Spark's Hadoop ``FileSystem`` (``spark._jvm``, the session's Hadoop
    configuration). ConfigError naming ``path`` when no FileSystem serves its scheme or it cannot be reached."""

    on_local_disk = False

    python_reads = False         # an executor's Python worker has no JVM: it cannot open these paths

    def __init__(self, session, path):
        self._jvm = session._jvm
        self._conf = session._jsc.hadoopConfiguration()
        self._fs = self._filesystem(path)
        self.scheme = str(self._fs.getScheme()).lower()

    def _filesystem(self, path):
        try:
            return self._path(path).getFileSystem(self._conf)
        except Exception as exc:        # py4j's Py4JJavaError: the JVM's exception, one line of it
            raise ConfigError("%s: no Hadoop file system of this Spark session reaches it (%s); configure the store "
                              "in Spark's Hadoop settings (spark.hadoop.fs.%s.impl and its jars, or a "
                              "spark.hadoop.fs.viewfs.mounttable.* link)"
                              % (path, _java_message(exc), scheme_of(path) or "defaultFS")) from None

    def _path(self, path):
        return self._jvm.org.apache.hadoop.fs.Path(str(path))

    def qualified(self, path):
        """``path`` as the full URI of its store (a plain path resolved against ``fs.defaultFS``)."""
        fs, p = self._fs_of(path)
        return str(fs.makeQualified(p).toString())

    def _fs_of(self, path):
        fs = self._fs if scheme_of(path) in (None, self.scheme) else self._filesystem(path)
        return fs, self._path(path)

    def local(self, path):
        raise ConfigError("%s is on a %s store, which Python's open() cannot read" % (path, self.scheme))

    def join(self, path, *parts):
        return "/".join([str(path).rstrip("/")] + [str(p).strip("/") for p in parts])

    def exists(self, path):
        fs, p = self._fs_of(path)
        return bool(fs.exists(p))

    def isdir(self, path):
        fs, p = self._fs_of(path)
        return bool(fs.exists(p) and fs.getFileStatus(p).isDirectory())

    def listdir(self, path):
        fs, p = self._fs_of(path)
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(p))

    def makedirs(self, path):
        fs, p = self._fs_of(path)
        fs.mkdirs(p)

    def delete(self, path):
        fs, p = self._fs_of(path)
        if fs.exists(p):
            fs.delete(p, True)

    def size(self, path):
        fs, p = self._fs_of(path)
        return int(fs.getFileStatus(p).getLen())

    def read_bytes(self, path):
        with self.open_input(path) as f:
            return f.read()

    def write_bytes(self, path, data):
        fs, p = self._fs_of(path)
        out = fs.create(p, True)
        try:
            view = memoryview(bytes(data))
            for start in range(0, len(view), CHUNK_BYTES):
                out.write(bytearray(view[start:start + CHUNK_BYTES]))
        finally:
            out.close()

    def open_input(self, path):
        """A seekable binary file object of ``path`` (its bytes cross from the JVM ``CHUNK_BYTES`` at a time)."""
        fs, p = self._fs_of(path)
        try:
            length = int(fs.getFileStatus(p).getLen())
            stream = fs.open(p)
        except Exception as exc:       # py4j's Py4JJavaError (FileNotFoundException, ...): an OSError here
            raise OSError("cannot open %s: %s" % (path, _java_message(exc))) from None
        return io.BufferedReader(_HadoopInput(self._jvm, stream, length), CHUNK_BYTES)

    def put_file(self, local_file, path):
        """Copy the local file ``local_file`` to ``path`` (inside the JVM: no byte crosses into Python)."""
        self._copy(self._jvm.org.apache.hadoop.fs.FileSystem.getLocal(self._conf),
                   self._path(os.path.abspath(local_file)), *self._fs_of(path))

    def get_file(self, path, local_file):
        """Copy ``path`` to the local file ``local_file`` (inside the JVM)."""
        fs, p = self._fs_of(path)
        self._copy(fs, p, self._jvm.org.apache.hadoop.fs.FileSystem.getLocal(self._conf).getRaw(),
                   self._path(os.path.abspath(local_file)))

    def copy_file(self, source, path):
        """Copy the file ``source`` (any URI this session reaches) to ``path`` (inside the JVM)."""
        self._copy(*self._fs_of(source), *self._fs_of(path))

    def _copy(self, source_fs, source, target_fs, target):
        try:
            self._jvm.org.apache.hadoop.fs.FileUtil.copy(source_fs, source, target_fs, target, False, True,
                                                         self._conf)
        except Exception as exc:       # py4j's Py4JJavaError: an OSError naming both ends
            raise OSError("cannot copy %s to %s: %s" % (source.toString(), target.toString(), _java_message(exc))) \
                from None


class _HadoopInput(io.RawIOBase):
    """A Hadoop ``FSDataInputStream`` as a raw, seekable Python file (what pyarrow's Parquet reader takes)."""

    def __init__(self, jvm, stream, length):
        super().__init__()
        self._utils, self._stream, self._length, self._position = jvm.org.apache.commons.io.IOUtils, stream, \
            length, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._length}[whence]
        self._position = max(0, base + int(offset))
        return self._position

    def readinto(self, buffer):
        count = min(len(buffer), self._length - self._position, CHUNK_BYTES)
        if count <= 0:
            return 0
        self._stream.seek(self._position)
        data = self._utils.toByteArray(self._stream, count)
        buffer[:count] = data
        self._position += count
        return count

    def close(self):
        if not self.closed:
            self._stream.close()
        super().close()


def _java_message(exc):
    """The first line of a JVM exception's own message (py4j's error without its Java trace)."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def put_folder(files, local_folder, path, last=()):
    """Copy every file under the local folder ``local_folder`` to folder ``path`` of ``files`` (same relative
    paths), the relative paths in ``last`` after all others, in their order (the files that commit the folder).
    Blocks on the copies."""
    names = []
    for root, _, found in os.walk(local_folder):
        for name in found:
            names.append(os.path.relpath(os.path.join(root, name), local_folder).replace(os.sep, "/"))
    ordered = sorted(n for n in names if n not in last) + [n for n in last if n in names]
    files.makedirs(path)
    for name in ordered:
        files.put_file(os.path.join(local_folder, name), files.join(path, name))


def get_folder(files, path, local_folder, skip=()):
    """Copy folder ``path`` of ``files`` into the local folder ``local_folder``, leaving out the top-level names in
    ``skip`` (a model's shard files stay where they are). Blocks on the copies."""
    os.makedirs(local_folder, exist_ok=True)
    for name in files.listdir(path):
        if name in skip:
            continue
        source, target = files.join(path, name), os.path.join(local_folder, name)
        if files.isdir(source):
            get_folder(files, source, target)
        else:
            files.get_file(source, target)
