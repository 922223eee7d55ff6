"""Methods of the toy plugin whose module is slow to import: ``HARNESS_TOY_IMPORT_S`` seconds (3 by default) of
sleep at import, as a module that imports a large library or compiles kernels when it loads. A worker's start-up,
which a cell's timeout does not count."""
from __future__ import annotations

import os
import time

from toy_plugin import Constant as _Constant
from toy_plugin import Sleep as _Sleep

time.sleep(float(os.environ.get("HARNESS_TOY_IMPORT_S", "3")))


class Constant(_Constant):
    pass


class Sleep(_Sleep):
    pass
