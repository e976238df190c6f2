"""What the spark-submit jobs (``jobs/``) share: reading their input (inputs.py), the strategy and checkpoint
flags (flags.py), and their output (output.py)."""
