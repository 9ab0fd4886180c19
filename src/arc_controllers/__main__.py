"""``python -m arc_controllers``: the controller manager, same as ``arc-controller``.

Ports: main.go (the ``/manager`` binary)
"""

import sys

from arc_controllers.cmd.manager import main

sys.exit(main())
