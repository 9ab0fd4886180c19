"""``python -m arc_controllers.cmd.sim``: the same as the ``arc-sim`` command.

Python only: ARC has no simulator.
"""

import sys

from arc_controllers.cmd.sim.main import main

if __name__ == "__main__":
    sys.exit(main())
