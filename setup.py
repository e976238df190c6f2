"""sparkps: MXNet-style networks trained by a parameter server that lives inside Apache Spark."""
import re

from setuptools import find_packages, setup

CONNECT = ["grpcio>=1.76.0", "grpcio-status>=1.76.0", "googleapis-common-protos>=1.71.0", "zstandard>=0.25.0"]
VERSION = re.search(r"__version__ = '([^']+)'", open("sparkps/__init__.py", encoding="utf-8").read()).group(1)

setup(
    name="sparkps",
    version=VERSION,  # one home: sparkps/__init__.py
    description="Distributed training inside Apache Spark: a Symbol API, a ZeroMQ parameter server, "
                "fit on RDDs and DataFrames.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["sparkps", "sparkps.*"]),
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.23",
        "pyzmq>=25",
        "msgpack>=1.0",
        "click>=8.0",
        "tqdm>=4.60",
        "matplotlib>=3.5",
        "pyspark>=3.5",
        "pandas>=1.5,<3",  # PySpark 4 warns that pandas 3 is not fully supported
        "pyarrow>=10",
        "threadpoolctl>=3",
        "numba>=0.59",  # the sparse tables' id index (benchmarks/bench_sparse.py: numpy searchsorted is slower)
    ],
    extras_require={
        # Spark Connect's client (remote sc:// sessions, spark.api.mode=connect): pyspark 4.3's own `connect` extra
        "connect": CONNECT,
        "gpu": ["cupy-cuda12x>=13"],
        "demo": ["scikit-learn>=1.2"],
        "onnx": ["onnx>=1.14", "onnxruntime>=1.16"],
        "mlflow": ["mlflow-skinny>=3.0,<4", "sqlalchemy", "alembic"],
        "test": ["pytest>=7", "pytest-timeout>=2", "pytest-xdist>=3", "scikit-learn>=1.2", "ruff>=0.6",
                 "onnx>=1.14", "onnxruntime>=1.16", "mlflow-skinny>=3.0,<4", "sqlalchemy", "alembic"] + CONNECT,
    },
    entry_points={"console_scripts": ["sparkps=sparkps.cli:main"]},
)
