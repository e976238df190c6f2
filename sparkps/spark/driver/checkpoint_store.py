"""A fit's checkpoint folder on a store (``checkpoint_dir`` a Spark URI: ``hdfs://``, ``s3a://``, ``viewfs://``).

The servers write their checkpoints with file I/O (:mod:`sparkps.comm.manifest`), and a server process on an
executor has no JVM to reach a store through Spark's Hadoop file systems. So a URI checkpoint folder is mirrored:

* on a master whose executors all run on this machine (``local[...]``, ``local-cluster[...]``) the servers write
  into a temporary folder here (``local``), restarts inside the fit read it, and when the fit ends (trained or
  failed) every checkpoint in it is copied to the store through Spark's Hadoop file systems, each checkpoint's
  ``manifest.json`` last: a checkpoint on the store is complete once its manifest is there (no rename, which
  object stores lack). ``fit(resume=True)`` first copies the store's checkpoints here, then picks the newest
  complete one as it does in a local folder;
* on any other master it is one ConfigError before the fit, naming ``checkpoint_dir``: the servers cannot write
  the store from the executors (a folder every node mounts, NFS or ``/dbfs``, works there).

A plain path or a ``file:`` URI is the folder itself (no copy). Blocks on the copies.

    with CheckpointFolder(trainer.checkpoint_dir, session, master, resume) as folder:
        ...  # folder.local: the path the servers write and latest_checkpoint reads
"""
import os
import shutil
import tempfile

from sparkps.comm.manifest import MANIFEST
from sparkps.errors import ConfigError
from sparkps.spark.model.storage import files_for, get_folder, is_uri, put_folder, strip_file_scheme

PREFIX = "sparkps-checkpoints-"


class CheckpointFolder:
    """The local folder a fit's servers checkpoint into, mirrored to ``folder`` when that is a store's URI (see the
    module docstring). ``folder`` None: no checkpoints (``local`` None)."""

    def __init__(self, folder, session, master, resume=False):
        from sparkps.spark.driver.stage import same_machine
        self.folder, self.files, self.local, self._fetched = folder, None, None, {}
        if not folder:
            return
        if not is_uri(folder):
            self.local = strip_file_scheme(folder)
            return
        if not same_machine(master):
            raise ConfigError("checkpoint_dir %s is a store's URI, and the servers of a fit on master %s write "
                              "their checkpoints with file I/O on the executors, which cannot reach it: give "
                              "checkpoint_dir (the jobs' --checkpoint-dir, the estimators' checkpointDir) as a folder "
                              "every node mounts at the same path (NFS, /dbfs)" % (folder, master))
        self.files = files_for(folder, session)       # a ConfigError naming it when no file system reaches it
        self.local = tempfile.mkdtemp(prefix=PREFIX)
        if resume and self.files.isdir(folder):
            get_folder(self.files, folder, self.local)
            self._fetched = {name: _manifest_time(os.path.join(self.local, name)) for name in os.listdir(self.local)}

    def stored(self, path):
        """``path`` (a checkpoint of ``local``, or None) as the store names it; as it is for a local folder."""
        if self.files is None or not path or not str(path).startswith(self.local):
            return path
        return self.files.join(self.folder, os.path.relpath(path, self.local))

    def publish(self):
        """Copy every checkpoint of ``local`` the store lacks or that changed here to the store (each manifest last);
        nothing for a local folder."""
        if self.files is None:
            return
        for name in sorted(os.listdir(self.local)):
            source = os.path.join(self.local, name)
            written = _manifest_time(source)
            if written is None or self._fetched.get(name) == written:
                continue               # unfinished by the servers (not a checkpoint), or the store's own copy
            target = self.files.join(self.folder, name)
            self.files.delete(target)
            put_folder(self.files, source, target, last=(MANIFEST,))

    def close(self):
        """``publish``, then remove the temporary folder."""
        if self.files is None:
            return
        try:
            self.publish()
        finally:
            shutil.rmtree(self.local, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _manifest_time(checkpoint):
    """The modification time of a local checkpoint's manifest, None when it has none."""
    try:
        return os.stat(os.path.join(checkpoint, MANIFEST)).st_mtime_ns
    except OSError:
        return None
