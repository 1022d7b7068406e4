#!/usr/bin/env bash
# On a machine with a CUDA GPU (and a CUDA build of torch): the tests marked `cuda` (tests/
# torch_backend), then the torch benchmark cases with their tensors on the GPU
# (EINSTRIDE_BENCH_TORCH_DEVICE=cuda), quick sizes. Prints ONE summary line; the details
# are in build/gpu-check-tests.txt and build/gpu-check.md. Exit 0 when both passed.
#
#   benchmarks/gpu_check.sh            # uses .venv/bin/python if present, else python3
#   PYTHON=/path/to/python benchmarks/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-}
if [ -z "$py" ]; then
    if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p build
gpu=$("$py" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>/dev/null)
if [ -z "$gpu" ]; then
    echo "gpu-check: no CUDA device (torch.cuda.is_available() is False with $py); nothing run"
    exit 2
fi

"$py" -m pytest -p no:cacheprovider -m cuda -rs tests/torch_backend > build/gpu-check-tests.txt 2>&1
tests_rc=$?
tests=$(grep -E '(passed|failed|error|skipped)' build/gpu-check-tests.txt | tail -n 1 | tr -d '=' | sed 's/^ *//; s/ *$//')

EINSTRIDE_BENCH_TORCH_DEVICE=cuda "$py" benchmarks/run.py --quick -k torch --no-chart \
    --output build/gpu-check.md > build/gpu-check-bench.txt 2>&1
bench_rc=$?
bench=$(grep -m 1 '^- Cases:' build/gpu-check.md 2>/dev/null | sed 's/^- Cases: //; s/\.$//')
geomean=$(grep -m 1 '^- Geometric mean' build/gpu-check.md 2>/dev/null | sed 's/.*suite: //; s/ (target.*//')

status=PASS
if [ "$tests_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ]; then status=FAIL; fi
echo "gpu-check $status on $gpu: cuda tests ${tests:-none} (exit $tests_rc); torch bench cases on cuda ${bench:-not run} geomean ${geomean:-n/a} vs torch.einsum (exit $bench_rc); see build/gpu-check.md"
[ "$status" = PASS ]
