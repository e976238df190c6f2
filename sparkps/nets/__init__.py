"""Networks built from a few settings (the model zoo): each module returns a Symbol with MXNet's layer names.

``sparkps.nets.mlp`` is the multilayer perceptron that the ``sparkps symbol mlp`` command, the Spark job, the
pyspark.ml estimator and the benchmarks share.
"""
