"""``python -m sparkps.ps.server``: run one server node until the job ends (see sparkps.ps.server.runner)."""
import sys

from sparkps.ps.server.runner import main

sys.exit(main())
