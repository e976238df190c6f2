"""``python -m sparkps.server``: run one server node until the job ends (see sparkps.server.runner)."""
import sys

from sparkps.server.runner import main

sys.exit(main())
