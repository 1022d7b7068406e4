"""Run the einstride benchmark suite (``make bench`` / ``make bench-quick``).

The harness is the package ``einstride_bench`` beside this script: a development tool that
is not part of the einstride wheel and uses einstride only as an installed library. This
script puts its own folder on ``sys.path`` and forwards its arguments, e.g.

    python benchmarks/run.py --quick -k attention
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/run.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from einstride_bench import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
