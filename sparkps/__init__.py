"""sparkps: MXNet-style networks trained by a parameter server inside Apache Spark."""
