"""Node life cycles outside Spark: the local launcher and the worker the ``sparkps worker`` command runs."""
