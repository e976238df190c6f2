"""``python -m sparkps.cli``: the ``sparkps`` command (what ``sparkps launch`` starts its roles with)."""
from sparkps.cli import main

main(prog_name="sparkps")
