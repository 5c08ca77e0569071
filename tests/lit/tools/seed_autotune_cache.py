"""Copy an autotune cache template, keying its entries by this machine's device.

A cached choice holds for one device (PJRT platform and kind, jax/jaxlib, CPU count), so
a cache checked into tests/lit/inputs cannot name the machine that runs the tests: its
template writes "@DEVICE@" where the device key goes.

    seed_autotune_cache.py TEMPLATE OUT
"""

import sys
from pathlib import Path

from convc.autotune_pjrt import device_key


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: seed_autotune_cache.py TEMPLATE OUT", file=sys.stderr)
        return 2
    template, out = (Path(arg) for arg in argv)
    out.write_text(template.read_text().replace("@DEVICE@", device_key(None)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
