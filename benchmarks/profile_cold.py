"""Where a cold einsum call spends its time (cProfile over new-shape calls).

PYTHONPATH=src python benchmarks/profile_cold.py                 # ij,jk->ik and bij,bjk->bik
PYTHONPATH=src python benchmarks/profile_cold.py --calls 200 "ab,bc,cd->ad"
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from einstride_bench.coldprofile import format_profile, profile_cold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("equations", nargs="*", default=["ij,jk->ik", "bij,bjk->bik"])
    parser.add_argument("--calls", type=int, default=60, help="new shapes per equation")
    parser.add_argument("--top", type=int, default=25, help="functions to list")
    args = parser.parse_args()
    for equation in args.equations:
        print(format_profile(profile_cold([equation], args.calls), args.top), end="\n\n")


if __name__ == "__main__":
    main()
