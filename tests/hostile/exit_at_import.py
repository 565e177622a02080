# hostile: sys.exit and os._exit while the definitions load
import os
import sys


class Quit:
    sys.exit(0)


class Gone:
    os._exit(0)
