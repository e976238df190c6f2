"""Where the servers of a fit write the trained sparse tables: a staging folder the driver picks before the fit.

At the end of a fit of a network with sparse tables fed through an input layout, every server writes its shard of
every table into this folder (COMMAND write_tables, :mod:`sparkps.rows.shards`) and worker 0 returns their manifest;
the driver then reads small tables inline and removes the folder, or hands it to the model
(:func:`sparkps.spark.model.table_rows.fit_tables`: ``save`` moves it into the model's folder; it is removed when
the model is garbage or the program ends). The servers, the driver and (for scoring) every executor read the same
path, so it is under ``spark.sparkps.modelDir`` when that is set, else a temporary folder on this machine when
every executor runs here (a local or local-cluster master). The servers write with plain file I/O, so a
``spark.sparkps.modelDir`` that is a store's URI (``hdfs://``, ``s3a://``, ``viewfs://``) is not a staging folder:
on a local or local-cluster master the tables are staged in a temporary folder here (``save`` to a URI copies them
to the store through Spark's Hadoop file systems); on another master it is one ConfigError before the fit.
Blocks on making the folder only.

    folder = staging_folder(session, master)      # '/tmp/sparkps-tables-k2j4f0' on a local master
"""
import os
import shutil
import tempfile
import uuid

from sparkps.errors import ConfigError

PREFIX = "sparkps-tables-"


def staging_folder(session, master):
    """A new, empty staging folder for a fit's tables (see the module docstring); ConfigError naming
    ``spark.sparkps.modelDir`` when the master's executors may run on other machines and it is not set."""
    from sparkps.spark.common.session import conf
    from sparkps.spark.driver.stage import same_machine
    from sparkps.spark.model.model_folder import local_path
    from sparkps.spark.model.spark_model import MODEL_DIR_CONF
    from sparkps.spark.model.storage import is_uri
    shared = conf(session, MODEL_DIR_CONF) if session is not None else None
    if shared and is_uri(shared):
        if same_machine(master):
            return tempfile.mkdtemp(prefix=PREFIX)
        raise ConfigError("the servers of a fit write the trained sparse tables with file I/O where the driver and "
                          "every executor read them, and %s=%s is a store's URI, which they cannot write: set it to a "
                          "folder every node mounts (NFS, /dbfs), then save the model to the URI "
                          "(model.write().save(%r))" % (MODEL_DIR_CONF, shared, shared.rstrip("/") + "/model"))
    if shared:
        folder = os.path.join(local_path(shared), PREFIX + uuid.uuid4().hex)
        os.makedirs(folder)
        return folder
    if same_machine(master):
        return tempfile.mkdtemp(prefix=PREFIX)
    raise ConfigError("the servers of a fit write the trained sparse tables where the driver and every executor "
                      "read them: set %s to a folder of a shared file system (master %s runs executors on other "
                      "machines)" % (MODEL_DIR_CONF, master))


def remove(folder):
    """Remove a staging folder (a fit that failed); nothing when it is gone already."""
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
