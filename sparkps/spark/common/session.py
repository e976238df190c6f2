"""What kind of Spark session a fit runs on: a classic one (a SparkContext and RDDs in this process) or a Spark
Connect one (a remote ``sc://`` session, ``spark.api.mode=connect``, ``SparkSession.builder.remote(...)``),
which has DataFrames only.  Nothing here blocks, except ``conf`` on a Connect session (one round trip)."""


def is_connect(session):
    """True for a Spark Connect session (or a DataFrame of one): no SparkContext, no RDDs."""
    session = getattr(session, "sparkSession", session)
    return type(session).__module__.startswith("pyspark.sql.connect")


def session_of(data):
    """The SparkSession behind a DataFrame, else None (an RDD or anything else)."""
    if hasattr(data, "sparkSession") and hasattr(data, "select"):
        return data.sparkSession
    return None


def is_frame(data):
    """True for a DataFrame of either session kind."""
    return session_of(data) is not None


def conf(session, key, default=None):
    """A Spark setting of ``session`` as a string (``default`` when unset), on either session kind."""
    try:
        value = session.conf.get(key, None)
    except Exception:     # a key the server refuses to read back
        value = None
    return default if value is None else str(value)
