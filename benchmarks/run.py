"""Run the einstride benchmark suite (``make bench`` / ``make bench-quick``).

The cases live in ``einstride.bench.suite`` so that ``einstride bench`` works from an
installed package too; this script only forwards its arguments, e.g.

    python benchmarks/run.py --quick -k attention
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/run.py
"""

import sys

from einstride.bench import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
