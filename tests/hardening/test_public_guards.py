"""Every public function of ``einstride.__all__`` under an address-space cap and a time bound.

Each is called on the inputs an attacker or a careless user passes: huge broadcast views
(10^14 elements over 8 bytes), empty arrays whose other lengths are huge, zero-byte items
(``V0``: a 10^12-element array of no bytes passes every byte count), ``range(10**9)`` and
other sequences NumPy would have to list first, as data, shapes, axes, sizes and ``out=``.
The calls run in a subprocess whose address space is capped (``RLIMIT_AS``) 512 MiB above
what it already uses, with einstride's memory limit at 64 MiB; each must return, or raise a
documented error (docs/reliability.md), within ``SECONDS``.  A missing guard shows up as a
``MemoryError`` from the cap, a call past the time bound, or a hang (the parent kills the
child after ``HANG_SECONDS`` and carries on with the next call in a new child).

A function added to ``einstride.__all__`` must get an entry in ``CASES`` (or a reason in
``NOT_FUNCTIONS``): the test fails until it has one.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
import threading
from typing import Any

import pytest
from fuzzing import BINARY, UNARY

import einstride as es

SECONDS = 3.0  # per call (the machine may be shared: generous; a missing guard takes minutes)
HANG_SECONDS = 10.0
STARTUP_SECONDS = 300.0  # importing NumPy and einstride on a busy machine
HEADROOM = 512 * 2**20
LIMIT = 64 * 2**20

# The inputs, built in the child (the names CASES uses).
INPUTS = """
BIG = np.broadcast_to(np.ones(1), (10**7, 10**7))  # 10^14 float64 elements
BIG1 = np.broadcast_to(np.ones(1), (10**12,))
BIGT = es.as_tensor(BIG)
BIGB = np.broadcast_to(np.ones(1, bool), (10**7, 10**7))
BIGI = np.broadcast_to(np.zeros(1, np.int64), (10**12,))
BATCH = np.broadcast_to(np.eye(3), (10**12, 3, 3))
TALL = np.broadcast_to(np.ones(1), (10**6, 2))
PATTERN = np.broadcast_to(np.arange(2.0), (10**7, 10**7, 2)).transpose()
EMPTY = np.empty((0, 10**12))
EMPTYI = np.empty((0,), np.int64)
V0 = np.zeros((10**6, 10**6), "V0")  # real, and no bytes
V0B = np.broadcast_to(np.zeros(1, "V0"), (10**7, 10**7))
V01 = np.zeros(10**12, "V0")
RANGE = range(10**9)
NESTED = [range(10**5)] * 10**5
"""

# name -> argument lists (Python source); each is called as ``es.name(<args>)``.
CASES: dict[str, list[str]] = {
    "Layout": [],  # EXTRA: Layout.create and its methods
    "Tensor": [],  # EXTRA: the constructor and methods
    "arange": [
        "10**12",
        "0, 1, 1e-12",
        "RANGE",
        "BIG",
        "np.array(0), np.array(10**12)",
        "np.datetime64('2000-01-01', 'ns'), np.datetime64('2020-01-01', 'ns')",
        "Decimal(0), Decimal(10**12)",
        "Fraction(0), Fraction(10**12)",
        "dt.timedelta(0), dt.timedelta(days=10**4), dt.timedelta(microseconds=1)",
        "dt.date(1, 1, 1), dt.date(9999, 1, 1), dt.timedelta(microseconds=1)",
        "0, 10**12, dtype='V0'",
    ],
    "as_tensor": ["BIG", "RANGE", "NESTED", "V0", "V0B", "[BIG]", "EMPTY"],
    "band_part": ["BIG, 0, 0", "EMPTY, 0, 0", "V0, 1, 1", "RANGE, 0, 0"],
    "boolean_mask": [
        "BIG, BIGB",
        "BIG1, np.broadcast_to(np.ones(1, bool), (10**12,))",
        "EMPTY, np.zeros(0, bool)",
        "RANGE, [True]",
        "V0, np.ones(10**6, bool)",
    ],
    "broadcast_to": [
        "BIG, (10**7, 10**7)",
        "1.0, RANGE",
        "V0, (2, 10**6, 10**6)",
        "EMPTY, (10**12, 0, 10**12)",
    ],
    "categorical": [
        "np.broadcast_to(np.zeros(1), (10**9, 1)), 1",
        "np.zeros((1, 2)), 10**12",
        "EMPTY, 3",
        "RANGE, 1",
    ],
    "check_destination": ["BIG, 'x'", "V0, 'x'", "RANGE, 'x'"],
    "check_no_overlap": ["BIG, [BIG, V0], 'x'", "np.zeros(2), RANGE, 'x'"],
    "clear_plan_cache": [""],
    "concat": ["[BIG, BIG]", "[EMPTY, EMPTY], axis=1", "[V0, V0]", "RANGE", "[RANGE]"],
    "contract_expression": [
        "'ij,jk->ik', (10**7, 10**7), (10**7, 10**7)",
        "'i', RANGE",
        "'ij,ij->ij', BIG.shape, BIG.shape)(BIG, BIG",
    ],
    "copy_to": [
        "RANGE, np.zeros(3)",
        "BIG, np.zeros(3)",
        "1, V0",
        "np.ones(3), RANGE",
        "NESTED, np.zeros(3)",
        "[2**70], np.zeros(1, np.int64)",
    ],
    "contract": [
        "'ij->ji', BIG",
        "'ij,ij->ij', BIG, BIG",
        "'i', RANGE",
        "'ij', V0",
        "'i->i', np.ones(3), out=RANGE",
        "'ij,jk->ik', BIG, BIG, memory_limit='max_input'",
    ],
    "contract_path": [
        "'i', RANGE",
        "'ij,jk', BIG, BIG",
        "'ij,jk->ik', (10**7, 10**7), (10**7, 10**7), shapes=True",
        "'ij', V0",
        "'i', (10**12,), shapes=True",
        "'i,i', RANGE, RANGE",
        "'ij,jk->ik', BIG, BIG, memory_limit=1000",
    ],
    "diag": ["BIG1", "V01", "EMPTY", "RANGE"],
    "diag_part": ["BIG", "V0", "EMPTY", "RANGE"],
    "einsum": [
        "'ij->ji', BIG",
        "'ij,ij->ij', BIG, BIG",
        "'i', RANGE",
        "'ij', V0",
        "'i->', BIG1",
        "'i->i', np.ones(3), out=RANGE",
        "'ij->', V0",
        "'ij->i', EMPTY",
        "np.ones(2), [10**5000]",
    ],
    "einsum_path": [
        "'i', RANGE",
        "'ij,jk', BIG, BIG",
        "'ij,jk->ik', (10**7, 10**7), (10**7, 10**7)",
        "'ij', V0",
        "'i', (10**12,)",
    ],
    "einsum_vjp": [
        "'ij->', (BIG,), np.ones(())",
        "'i->', (RANGE,), np.ones(())",
        "'ij->', (V0,), np.ones(())",
    ],
    "explain": ["'ij,jk->ik', (10**7, 10**7), (10**7, 10**7)", "'i', RANGE", "'ij', V0"],
    "expand_dims": ["BIG, RANGE", "V0, 0", "EMPTY, (0, 1)"],
    "eye": [
        "10**8",
        "3, batch_shape=RANGE",
        "10**6, dtype='V0'",
        "0, 10**12",
        "3, batch_shape=(10**12,)",
    ],
    "fans": ["RANGE", "(10**12, 10**12)", "V0"],
    "flatten": ["BIG", "V0", "V0B", "PATTERN", "RANGE", "EMPTY"],
    "flatten_to": [
        "BIG, np.zeros(3)",
        "V0, V01",
        "RANGE, np.zeros(3)",
        "np.ones(3), RANGE",
        "V0B, V01",
    ],
    "full": [
        "RANGE, 1",
        "(10**7, 10**7), 1",
        "3, RANGE",
        "(10**6, 10**6), 0, dtype='V0'",
        "(0, 10**12), 1",
        "3, NESTED",
    ],
    "full_like": ["BIG, 1", "V0, 0", "RANGE, 1", "EMPTY, 2", "np.ones(3), RANGE"],
    "gather": [
        "BIG, [0]",
        "BIG, BIGI",
        "BIG1, [0]",
        "EMPTY, [0]",
        "RANGE, [0]",
        "np.broadcast_to(np.ones(1), (10**6, 10**6, 3)), np.broadcast_to(np.zeros(1, "
        "np.int64), (10**6, 10**6, 1)), axis=2, batch_dims=2",
        "V0, [0]",
        "np.ones(3), RANGE",
        "np.broadcast_to(np.ones(1), (10**3, 10**12)), [0, 5], axis=1",
        "np.broadcast_to(np.ones(1), (10**4, 10**5, 3)), np.zeros((10**4, 1), np.int64), "
        "axis=1, batch_dims=1",
    ],
    "glorot_normal": ["RANGE", "(10**7, 10**7)"],
    "glorot_uniform": ["RANGE", "(10**7, 10**7)"],
    "he_normal": ["RANGE", "(10**7, 10**7)"],
    "he_uniform": ["RANGE", "(10**7, 10**7)"],
    "is_reduced_precision": ["BIG", "RANGE", "V0"],
    "lecun_normal": ["RANGE", "(10**7, 10**7)"],
    "lecun_uniform": ["RANGE", "(10**7, 10**7)"],
    "linspace": [
        "0, 1, 10**12",
        "BIG, 1, 2",
        "0, 1, 10**9, dtype=np.int8",
        "RANGE, 1, 2",
        "0, EMPTY, 10**6",
    ],
    "nonzero_indices": ["BIG", "V0", "V0B", "EMPTY", "RANGE", "BIGB"],
    "one_hot": ["EMPTYI, 10**13", "BIGI, 2", "RANGE, 2", "[0], 2, on_value=RANGE"],
    "ones": ["RANGE", "(10**7, 10**7)", "(10**6, 10**6), dtype='V0'"],
    "ones_like": ["BIG", "V0", "RANGE"],
    "orthogonal": ["(10**7, 10**7)", "RANGE", "(10**12, 1)"],
    "pad": [
        "BIG, [(1, 1), (1, 1)]",
        "V0, [(1, 1), (1, 1)]",
        "np.ones(3), RANGE",
        "np.ones(3), [(1, 1)], value=RANGE",
        "EMPTY, [(0, 0), (0, 0)]",
        "np.zeros(2, np.int8), [(1, 1)], value=1000",
    ],
    "parse_equation": ["'i', RANGE", "'ij', (10**12, 10**12)", "'i', (2.5,)"],
    "plan_cache_info": [""],
    "num_threads": [""],
    "set_num_threads": ["10**9", "RANGE", "-1", "None"],
    "qr": ["BATCH", "TALL, full_matrices=True", "RANGE", "EMPTY"],
    "random_normal": ["RANGE", "(10**7, 10**7)"],
    "random_uniform": ["RANGE", "(10**7, 10**7)", "3, -1e308, 1e308"],
    "reshape": ["BIG, -1", "V0, -1", "PATTERN, -1", "BIG, RANGE", "RANGE, -1", "EMPTY, (0, -1)"],
    "resize": [
        "BIG, 5",
        "RANGE, 5",
        "np.ones(3), 10**15",
        "V0, 3",
        "PATTERN, 3",
        "V0B, (10**6, 10**6)",
    ],
    "resize_to": ["BIG, np.zeros(3)", "V0, V01", "RANGE, np.zeros(3)", "PATTERN, np.zeros(3)"],
    "reverse": [
        "BIG, 0",
        "V0, 0",
        "EMPTY, 1",
        "np.ones(3), RANGE",
        "V0B, 1",
        "np.ones(3), 0, out=RANGE",
    ],
    "set_diag": ["BIG, np.zeros(10**7)", "V0, V01[:10**6]", "RANGE, [1]"],
    "split": ["BIG, 10**7", "EMPTY, 2**40", "V0, RANGE", "np.ones(3), RANGE", "V01, 10**12"],
    "squeeze": ["BIG", "BIG, RANGE", "V0"],
    "stack": ["[BIG, BIG]", "RANGE", "[V0, V0]", "[EMPTY] * 10"],
    "svd": ["BATCH", "TALL, full_matrices=True", "RANGE", "EMPTY"],
    "tensor": ["BIG", "RANGE", "NESTED", "V0", "V0B", "[BIG]", "EMPTY", "[1000], dtype=np.int8"],
    "tensordot": [
        "BIG, BIG, 1",
        "RANGE, RANGE, 1",
        "V0, V0",
        "np.ones(3), np.ones(3), RANGE",
        "BIG1, BIG1, 0",
        "EMPTY, EMPTY.T, 1",
    ],
    "tensors_overlap": ["BIG, BIG", "RANGE, RANGE", "V0, V0"],
    "tile": ["BIG, [1, 1]", "V0, [2, 2]", "EMPTY, [10**6, 1]", "np.ones(3), RANGE", "V0B, [1, 1]"],
    "to_full_precision": [
        "np.broadcast_to(es.to_reduced_precision(np.ones(1, np.float32)), (10**7, 10**7))",
        "RANGE",
    ],
    "to_reduced_precision": ["np.broadcast_to(np.ones(1, np.float32), (10**7, 10**7))", "RANGE"],
    "trace": ["BATCH", "BIG", "V0", "EMPTY"],
    "transpose": ["BIG", "BIG, RANGE", "V0"],
    "truncated_normal": ["RANGE", "10**15"],
    "try_copy_to": [
        "RANGE, np.zeros(3)",
        "BIG, np.zeros(3)",
        "1, V0",
        "np.ones(3), RANGE",
        "[2**70], np.zeros(1, np.int64)",
    ],
    "try_flatten_to": ["BIG, np.zeros(3)", "V0, V01", "RANGE, np.zeros(3)", "np.ones(3), RANGE"],
    "unstack": ["BIGT", "BIG1", "EMPTY, 1", "V0", "RANGE"],
    "where": ["BIGB, 1.0, 0.0", "RANGE, 1, 0", "True, V0, V0", "EMPTY, 1, 0"],
    "zeros": ["RANGE", "(10**7, 10**7)", "(10**6, 10**6), dtype='V0'"],
    "zeros_like": ["BIG", "V0", "RANGE"],
}

# Element-wise functions: the same inputs for each.
for _name in UNARY:
    CASES[_name] = [
        "BIG",
        "V0",
        "EMPTY",
        "RANGE",
        "NESTED",
        "BIGT",
        "np.ones(3), out=RANGE",
        "np.ones(3), out=V01[:3]",
    ]
for _name in BINARY:
    CASES[_name] = [
        "BIG, 1.0",
        "1, RANGE",
        "BIG, BIG",
        "V0, V0",
        "EMPTY, 2",
        "BIGT, 2",
        "np.ones((10**4, 1)), np.ones(10**4)",
        "np.ones(3), 1, out=RANGE",
    ]

# Calls that are not ``es.name(...)``: constructors and methods.
EXTRA = {
    "Layout": [
        "es.Layout.create(RANGE)",
        "es.Layout.create((10**7, 10**7), (0, 0))",
        "es.Layout.create((2,)).overlaps(RANGE)",
        "es.Layout.create((2,)).split(0, RANGE)",
    ],
    "Tensor": [
        "es.Tensor(np.zeros(1), (10**12,), (0,))",
        "es.Tensor(RANGE)",
        "es.Tensor(np.zeros(3), RANGE)",
        "BIGT.copy()",
        "1.0 in BIGT",
        "BIGT.reshape(RANGE)",
        "BIGT.diagonal(RANGE)",
        "np.asarray(BIGT, np.float32)",
        "BIGT + BIGT",
        "BIGT.squeeze(RANGE)",
        "es.as_tensor(V0B).copy()",
    ],
}

NOT_FUNCTIONS = {
    "EinsumError": "an error type",
    "EinsumPathError": "an error type",
    "EinsumTypeError": "an error type",
    "LayoutError": "an error type",
    "MemoryLimitError": "an error type",
    "OutOfRangeError": "an error type",
    "__version__": "a string",
    "EinsumSpec": "a record parse_equation makes (covered there)",
    "Equation": "a record parse_equation makes (covered there)",
    "Plan": "a record the planner makes",
    "QRResult": "qr's result record",
    "SVDResult": "svd's result record",
    "Expression": "made by contract_expression (covered there)",
}

# Calls that must succeed: small results of huge inputs, read without copying the input.
MUST_RETURN = {
    "gather(np.broadcast_to(np.ones(1), (10**3, 10**12)), [0, 5], axis=1)",
    "gather(np.broadcast_to(np.ones(1), (10**4, 10**5, 3)), np.zeros((10**4, 1), np.int64), "
    "axis=1, batch_dims=1)",
    "reshape(BIG, -1)",
    "flatten(BIG)",
    "transpose(BIG)",
    "diag_part(BIG)",
    "trace(BIG)",
    "tile(EMPTY, [10**6, 1])",
    "band_part(EMPTY, 0, 0)",
    "qr(EMPTY)",
    "svd(EMPTY)",
    "resize(BIG, 5)",
    "resize(PATTERN, 3)",
    "resize_to(BIG, np.zeros(3))",
    "one_hot(EMPTYI, 10**13)",
    "broadcast_to(BIG, (10**7, 10**7))",
    "linspace(0, EMPTY, 10**6)",
    "categorical(EMPTY, 3)",
    "eye(0, 10**12)",
}

# Engine calls (and tensordot, which runs on einsum) whose front end is being rewritten
# (issue 15): they fail here today and are the lead's to fix; strict, so that a fix shows up
# as an unexpected pass.
ENGINE_PENDING: dict[str, str] = {
    "einsum('i->', BIG1)": "a 10^12-element broadcast is summed: no bound on the scan",
    "contract_expression('i', RANGE)": "a range as a shape is listed unsized: MemoryError",
}

# The errors a call may end with (docs/reliability.md); any other is a failure, and so is a
# documented one that is also an IndexError, KeyError, AttributeError, MemoryError, ...
DOCUMENTED = (
    "MemoryLimitError",
    "LayoutError",
    "EinsumError",
    "EinsumTypeError",
    "OutOfRangeError",
    "TypeError",
    "ValueError",
    "UFuncTypeError",
    "LinAlgError",
    "DTypePromotionError",
)
FORBIDDEN_BASES = (
    "IndexError",
    "KeyError",
    "AttributeError",
    "MemoryError",
    "RuntimeError",
    "SystemError",
    "AssertionError",
)


def all_cases() -> list[tuple[str, str]]:
    """(id, Python expression) for every case."""
    cases = []
    for name, arg_lists in sorted(CASES.items()):
        cases += [(f"{name}({args})", f"es.{name}({args})") for args in arg_lists]
    for name, calls in sorted(EXTRA.items()):
        cases += [(f"{name}: {call}", call) for call in calls]
    return cases


CHILD = """
import datetime as dt, json, resource, sys, time
from decimal import Decimal
from fractions import Fraction
import numpy as np
import einstride as es
from einstride import memory

es.einsum("ij,jk->ik", np.ones((64, 64)), np.ones((64, 64)))  # warm BLAS up first
@INPUTS@

def vm_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")

cap = vm_bytes() + @HEADROOM@
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
memory.set_memory_limit(@LIMIT@)
names = dict(globals())
print(json.dumps(["ready"]), flush=True)

for case, code in json.loads(sys.stdin.read()):
    print(json.dumps(["start", case]), flush=True)
    start = time.perf_counter()
    try:
        eval(code, names)
        kind, message, bases = "returned", "", []
    except BaseException as error:
        kind, message = type(error).__name__, str(error)[:300]
        bases = [b.__name__ for b in type(error).__mro__]
    seconds = time.perf_counter() - start
    print(json.dumps([case, kind, message, seconds, bases]), flush=True)
"""

Outcome = tuple[str, str, float, list[str]]  # (error name or "returned", message, s, bases)


def run_child(
    cases: list[tuple[str, str]], outcomes: dict[str, Any], hang_seconds: float = HANG_SECONDS
) -> None:
    """Run ``cases`` in one capped child until it finishes, dies or hangs on one; that one
    is recorded, the rest are left for the next child."""
    code = (
        CHILD.replace("@INPUTS@", INPUTS)
        .replace("@HEADROOM@", str(HEADROOM))
        .replace("@LIMIT@", str(LIMIT))
    )
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(cases))
        proc.stdin.close()
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
        reader.start()
        current = None
        ready = False
        while True:
            try:
                line = lines.get(timeout=hang_seconds if ready else STARTUP_SECONDS)
            except queue.Empty:
                proc.kill()
                if current is None:
                    raise AssertionError("the capped child did not start") from None
                outcomes[current] = ("hung", f"no answer in {hang_seconds} s", 1e9, [])
                break
            if not line:
                break
            record = json.loads(line)
            ready = True
            if record[0] == "ready":
                continue
            if record[0] == "start":
                current = record[1]
            else:
                outcomes[record[0]] = tuple(record[1:])
                current = None
        proc.wait()
        reader.join()
        if current is not None and current not in outcomes:  # the child died on this one
            errors.seek(0)
            outcomes[current] = ("died", errors.read()[-500:], 1e9, [])


def _read_lines(stream: Any, lines: queue.Queue[str]) -> None:
    """Hand the child's lines over one by one, then an empty string at its end."""
    for line in stream:
        lines.put(line)
    lines.put("")


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS and /proc/self/status are Linux facilities")
    cases = all_cases()
    results: dict[str, Outcome] = {}
    while remaining := [c for c in cases if c[0] not in results]:
        count = len(results)
        run_child(remaining, results)
        if len(results) == count:  # the child does not even start
            raise AssertionError(f"the capped child answered nothing ({remaining[0]})")
    return results


def _params() -> list[Any]:
    marks = {
        case: pytest.mark.xfail(strict=True, reason=f"engine front end: pending ({why})")
        for case, why in ENGINE_PENDING.items()
    }
    return [pytest.param(case, marks=marks.get(case, ()), id=case) for case, _ in all_cases()]


@pytest.mark.parametrize("case", _params())
def test_every_public_function_is_guarded(outcomes, case):
    kind, message, seconds, bases = outcomes[case]
    assert kind == "returned" or kind in DOCUMENTED, f"{case}: {kind}: {message}"
    forbidden = [base for base in FORBIDDEN_BASES if base in bases]
    assert not forbidden, f"{case}: {kind} is also a {forbidden}: {message}"
    assert seconds < SECONDS, f"{case} took {seconds:.1f} s"
    if kind == "MemoryLimitError":
        assert "would allocate" in message and "memory limit" in message, message
    if case in MUST_RETURN:
        assert kind == "returned", f"{case}: {kind}: {message}"


def test_every_public_name_has_cases():
    missing = set(es.__all__) - set(CASES) - set(NOT_FUNCTIONS)
    assert not missing, f"add CASES (or a NOT_FUNCTIONS reason) for {sorted(missing)}"
    assert not (set(CASES) - set(es.__all__)), "CASES names something that is not public"
    assert all(CASES[name] or EXTRA.get(name) for name in CASES)
    assert {case for case, _ in all_cases()} >= MUST_RETURN


def test_the_cap_and_the_hang_detection_are_real():
    """A plain large allocation dies of the cap, and a call that never returns is reported
    as hung, the next call running in a new child (so the test above can fail both ways)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS and /proc/self/status are Linux facilities")
    results: dict[str, Outcome] = {}
    cases = [("big", "np.ones(2**30)"), ("hang", "time.sleep(60)"), ("after", "1")]
    while remaining := [c for c in cases if c[0] not in results]:
        run_child(remaining, results, hang_seconds=3.0)
    assert results["big"][0] == "MemoryError"
    assert results["hang"][0] == "hung"
    assert results["after"][0] == "returned"
