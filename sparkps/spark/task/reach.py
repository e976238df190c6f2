"""The task side of the scheduler placement probe (``sparkps.spark.driver.placement.tasks_reach``): can a task of
this cluster open a TCP connection to the driver's address? Blocks at most ``timeout`` seconds a batch."""


def reaches(host, port, timeout):
    """True when a TCP connection to ``host:port`` opens within ``timeout`` s (refused or silent: False)."""
    import socket
    try:
        socket.create_connection((str(host).strip("[]"), int(port)), timeout=timeout).close()
        return True
    except OSError:
        return False


def probe_batches(host, port, timeout):
    """A ``mapInArrow`` function: for each input batch one row ``reached`` (boolean) of ``reaches``."""
    def probe(batches):
        import pyarrow as pa
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"reached": [reaches(host, port, timeout)]})
    return probe
