"""Memory guards: a result that would need more than the memory limit fails fast, naming its
size, and allocates nothing.

The huge cases run in one subprocess whose address space is capped (``RLIMIT_AS``) a few
hundred MiB above what the interpreter already uses: a missing guard shows up there as a
``MemoryError`` (or as a call that succeeds), never as a machine swapping to death.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import einstride as es
from einstride import memory

HUGE = "np.broadcast_to(np.ones(1), (10**7, 10**7))"  # 10^14 elements, 8 bytes of storage
PATTERN = "np.broadcast_to(np.arange(2.0), (10**7, 10**7, 2))"  # transposed: no view reshape

# (name, expression, expected error class name); each expression must raise.  Outside einsum
# the guard raises einstride.MemoryLimitError (a ValueError); einsum's planner EinsumError.
DEFAULT_LIMIT_CASES = [
    ("einsum i->iii on 10^5", "es.einsum('i->iii', np.ones(10**5))", "EinsumError"),
    (
        "einsum outer product of two 10^6 vectors",
        "es.einsum('i,j->ij', np.ones(10**6), np.ones(10**6))",
        "EinsumError",
    ),
    # an intermediate of 8 * 10^20 bytes: slicing it within any machine's memory would take
    # more than 2^16 slices (operands of no zero stride: a summed label an operand
    # broadcasts would be left out of it, plan.dropped_axes, and an output label every
    # operand broadcasts spread, either making a first product that fits)
    (
        "einsum intermediate blown up by a bad explicit path",
        "es.einsum('ij,kl,jl,ik->', *[np.lib.stride_tricks.as_strided(np.ones(2 * 10**5),"
        " (10**5, 10**5), (8, 8))] * 4, optimize=[(0, 1), (0, 1), (0, 1)])",
        "EinsumError",
    ),
    ("einsum over broadcast operands", f"es.einsum('ij,ij->ij', {HUGE}, {HUGE})", "EinsumError"),
    (
        "contract_expression over broadcast operands",
        f"es.contract_expression('ij,ij->ij', (10**7, 10**7), (10**7, 10**7))({HUGE}, {HUGE})",
        "EinsumError",
    ),
    (
        "einsum_vjp of a broadcast operand",
        f"es.einsum_vjp('ij->', ({HUGE},), np.ones(()))",
        "EinsumError",
    ),
    # a scan of 10^14 elements (a review: the reductions read it for hours)
    ("Tensor.sum of a broadcast", f"es.as_tensor({HUGE}).sum()", "MemoryLimitError"),
    ("Tensor.max of a broadcast", f"es.as_tensor({HUGE}).max(axis=0)", "MemoryLimitError"),
    ("tile with a huge factor", "es.tile(np.ones(10), [10**12])", "MemoryLimitError"),
    ("tile with huge factors", "es.tile(np.ones((2, 2)), [10**6, 10**6])", "MemoryLimitError"),
    ("pad with a huge pad", "es.pad(np.ones(3), [(10**12, 0)])", "MemoryLimitError"),
    (
        "pad a huge constant",
        "es.pad(np.ones((2, 2)), [(0, 10**7), (10**7, 0)], value=5)",
        "MemoryLimitError",
    ),
    ("resize to 10^15", "es.resize(np.ones(3), 10**15)", "MemoryLimitError"),
    ("resize a Tensor", "es.resize(es.tensor([1.0]), (10**8, 10**8))", "MemoryLimitError"),
    ("zeros", "es.zeros((10**7, 10**7))", "MemoryLimitError"),
    ("ones", "es.ones(10**15, dtype=np.int8)", "MemoryLimitError"),
    ("full", "es.full((10**8, 10**8), 1.5)", "MemoryLimitError"),
    ("eye", "es.eye(10**8)", "MemoryLimitError"),
    ("eye with a huge batch", "es.eye(3, batch_shape=(10**12,))", "MemoryLimitError"),
    ("one_hot with a huge depth", "es.one_hot(np.arange(10), 10**13)", "MemoryLimitError"),
    ("arange", "es.arange(10**15)", "MemoryLimitError"),
    ("arange of floats", "es.arange(0.0, 1.0, 1e-15)", "MemoryLimitError"),
    ("linspace", "es.linspace(0, 1, 10**15)", "MemoryLimitError"),
    ("zeros_like a broadcast", f"es.zeros_like({HUGE})", "MemoryLimitError"),
    ("ones_like a broadcast", f"es.ones_like(es.as_tensor({HUGE}))", "MemoryLimitError"),
    ("full_like a broadcast", f"es.full_like({HUGE}, 2)", "MemoryLimitError"),
    ("random_uniform", "es.random_uniform((10**7, 10**7), seed=0)", "MemoryLimitError"),
    ("random_normal", "es.random_normal((10**7, 10**7), seed=0)", "MemoryLimitError"),
    ("truncated_normal", "es.truncated_normal(10**15, seed=0)", "MemoryLimitError"),
    ("glorot_uniform", "es.glorot_uniform((10**7, 10**7), seed=0)", "MemoryLimitError"),
    ("he_normal", "es.he_normal((10**7, 10**7), seed=0)", "MemoryLimitError"),
    ("orthogonal", "es.orthogonal((10**7, 10**7), seed=0)", "MemoryLimitError"),
    (
        "categorical with many samples",
        "es.categorical(np.zeros((10, 2)), 10**13, seed=0)",
        "MemoryLimitError",
    ),
    (
        "diag of a broadcast vector",
        "es.diag(np.broadcast_to(np.ones(1), (10**7,)))",
        "MemoryLimitError",
    ),
    # broadcast, then copy
    ("tensor() of a broadcast", f"es.tensor({HUGE})", "MemoryLimitError"),
    (
        "Tensor.copy of a broadcast",
        "es.broadcast_to(es.tensor([1.0]), (10**7, 10**7)).copy()",
        "MemoryLimitError",
    ),
    (
        "reshape that must copy a broadcast",
        f"es.reshape(es.transpose({PATTERN}), -1)",
        "MemoryLimitError",
    ),
    ("Tensor.reshape that must copy", f"es.as_tensor({PATTERN}).T.reshape(-1)", "MemoryLimitError"),
    ("flatten that must copy", f"es.flatten(es.transpose({PATTERN}))", "MemoryLimitError"),
    ("reverse a broadcast", f"es.reverse({HUGE}, 0)", "MemoryLimitError"),
    ("stack broadcasts", f"es.stack([{HUGE}, {HUGE}])", "MemoryLimitError"),
    ("concat broadcasts", f"es.concat([{HUGE}, {HUGE}])", "MemoryLimitError"),
    ("where over broadcasts", f"es.where(True, {HUGE}, 0.0)", "MemoryLimitError"),
    (
        "element-wise outer sum",
        "es.add(np.ones((10**7, 1)), np.ones((1, 10**7)))",
        "MemoryLimitError",
    ),
    ("element-wise of a broadcast", f"es.sqrt({HUGE})", "MemoryLimitError"),
    ("comparison of broadcasts", f"es.less({HUGE}, {HUGE})", "MemoryLimitError"),
    ("set_diag of a broadcast", f"es.set_diag({HUGE}, np.zeros(10**7))", "MemoryLimitError"),
    ("band_part of a broadcast", f"es.band_part({HUGE}, 0, 0)", "MemoryLimitError"),
    (
        "gather from a broadcast",
        f"es.gather({HUGE}, np.broadcast_to(np.zeros(1, np.int64), (10**7,)))",
        "MemoryLimitError",
    ),
    (
        "boolean_mask of a broadcast",
        f"es.boolean_mask({HUGE}, np.broadcast_to(np.ones(1, bool), (10**7,)))",
        "MemoryLimitError",
    ),
    (
        "qr of a broadcast batch",
        "es.qr(np.broadcast_to(np.eye(3), (10**12, 3, 3)))",
        "MemoryLimitError",
    ),
    (
        "svd of a broadcast batch",
        "es.svd(np.broadcast_to(np.eye(3), (10**12, 3, 3)))",
        "MemoryLimitError",
    ),
    (
        "split an empty axis into 2**40 views",
        "es.split(np.zeros((0, 3)), 2**40)",
        "MemoryLimitError",
    ),
    (
        "unstack a broadcast axis of 10^12",
        "es.unstack(es.as_tensor(np.broadcast_to(np.ones(3), (10**12, 3))))",
        "MemoryLimitError",
    ),
    (
        "to_reduced_precision of a broadcast",
        "es.to_reduced_precision(np.broadcast_to(np.ones(1, np.float32), (10**7, 10**7)))",
        "MemoryLimitError",
    ),
]

# Under a small configured limit (set_memory_limit(2**20)): the limit is honoured everywhere.
SMALL_LIMIT_CASES = [
    ("zeros over a configured limit", "es.zeros(2**18)", "MemoryLimitError"),
    (
        "nonzero_indices over a configured limit",
        "es.nonzero_indices(np.broadcast_to(np.ones(1), (2**9, 2**9)))",
        "MemoryLimitError",
    ),
    (
        "einsum obeys the configured limit",
        "es.einsum('i,j->ij', np.ones(2**9), np.ones(2**9))",
        "EinsumError",
    ),
    ("resize over a configured limit", "es.resize(np.ones(1), 2**18)", "MemoryLimitError"),
]

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import numpy as np
    import einstride as es
    from einstride import memory

    es.einsum("ij,jk->ik", np.ones((64, 64)), np.ones((64, 64)))  # warm BLAS up first

    def vm_bytes():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmSize")

    cap = vm_bytes() + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def run(cases):
        for name, code, _ in cases:
            print(json.dumps(["start", name]), flush=True)
            start = time.perf_counter()
            try:
                eval(code, {"np": np, "es": es})
                kind, message = "returned", ""
            except BaseException as error:
                kind, message = type(error).__name__, str(error)
            seconds = time.perf_counter() - start
            print(json.dumps([name, kind, message, seconds]), flush=True)

    run(json.loads(sys.argv[1]))
    memory.set_memory_limit(2**20)
    run(json.loads(sys.argv[2]))
    """
)

HEADROOM = 384 * 2**20


@pytest.fixture(scope="module")
def capped_outcomes() -> dict[str, tuple[str, str, float]]:
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS and /proc/self/status are Linux facilities")
    code = CHILD.replace("HEADROOM", str(HEADROOM))
    args = [
        sys.executable,
        "-c",
        code,
        json.dumps(DEFAULT_LIMIT_CASES),
        json.dumps(SMALL_LIMIT_CASES),
    ]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        stdout = proc.stdout
        assert proc.returncode == 0, proc.stderr[-3000:]
    except subprocess.TimeoutExpired as expired:  # a case hung: report it, not the whole run
        stdout = (
            expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        )
    outcomes: dict[str, tuple[str, str, float]] = {}
    for line in stdout.splitlines():
        record = json.loads(line)
        if record[0] == "start":
            outcomes[record[1]] = ("hung (the run timed out here)", "", float("inf"))
        else:
            name, kind, message, seconds = record
            outcomes[name] = (kind, message, seconds)
    return outcomes


@pytest.mark.parametrize(
    ("name", "code", "expected"),
    DEFAULT_LIMIT_CASES + SMALL_LIMIT_CASES,
    ids=[c[0] for c in DEFAULT_LIMIT_CASES + SMALL_LIMIT_CASES],
)
def test_huge_results_fail_fast_without_allocating(capped_outcomes, name, code, expected):
    kind, message, seconds = capped_outcomes.get(name, ("not reached", "", 0.0))
    assert kind == expected, f"{code}: {kind} {message[:300]}"
    assert "would allocate" in message and "bytes" in message, message
    assert "memory limit" in message, message
    assert seconds < 2.0, f"{code} took {seconds:.2f} s"


def test_the_cap_is_real():
    """The subprocess's cap does stop a plain large allocation (so the test above can fail)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS and /proc/self/status are Linux facilities")
    code = CHILD.replace("HEADROOM", str(HEADROOM)).replace(
        "run(json.loads(sys.argv[1]))", "run([['big', 'np.ones(2**30)', '']])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "[]", "[]"], capture_output=True, text=True, timeout=120
    )
    assert json.loads(proc.stdout.splitlines()[1])[1] == "MemoryError"


# -- the helper itself (in process: nothing here allocates much) ---------------------------------


def test_the_limit_defaults_to_physical_memory_and_can_be_restored():
    assert memory.memory_limit() == memory.physical_memory() > 0
    previous = memory.set_memory_limit(1000)
    try:
        assert memory.memory_limit() == 1000
        with pytest.raises(es.MemoryLimitError, match=r"8,000 bytes.*limit of 1,000 bytes"):
            es.zeros(1000)
        with pytest.raises(es.EinsumError, match="limit of 1,000 bytes"):
            es.einsum("i,j->ij", np.ones(20), np.ones(20))
        assert es.zeros(100).shape == (100,)  # 800 bytes: fine
        # einsum's own memory_limit= still wins for its call
        assert es.einsum("i,j->ij", np.ones(20), np.ones(20), memory_limit=10**6).shape == (20, 20)
    finally:
        assert memory.set_memory_limit(previous) == 1000
    assert memory.memory_limit() == memory.physical_memory()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_set_memory_limit_rejects_nonsense(bad):
    with pytest.raises((TypeError, ValueError)):
        memory.set_memory_limit(bad)
    assert memory.memory_limit() == memory.physical_memory()


def test_check_array_names_shape_dtype_and_bytes():
    with pytest.raises(ValueError) as info:
        memory.check_array((10**9, 10**9), np.complex128, "thing")
    message = str(info.value)
    assert "thing of shape (1000000000, 1000000000) (complex128)" in message
    assert f"{16 * 10**18:,} bytes" in message
    with pytest.raises(es.LayoutError):
        memory.check_allocation(2, "x", es.LayoutError, limit=1)
    memory.check_allocation(1, "x", limit=1)  # at the limit: fine


def test_guards_let_ordinary_sizes_through():
    big_but_fine = np.broadcast_to(np.ones(1), (100, 100))
    assert es.tensor(big_but_fine).shape == (100, 100)
    assert es.tile(np.ones(3), [4]).shape == (12,)
    assert es.add(np.ones((100, 1)), np.ones((1, 100))).shape == (100, 100)
    assert es.arange(0.0, 1.0, 0.1).shape == (10,)
    assert es.arange(5, 0, -1).numpy().tolist() == [5, 4, 3, 2, 1]
    assert es.boolean_mask(np.arange(6).reshape(2, 3), [True, False], axis=0).tolist() == [
        [0, 1, 2]
    ]
    assert len(es.split(np.zeros((0, 3)), 5)) == 5  # five empty views: fine
    batch = np.broadcast_to(np.zeros(1), (10**6, 10**6, 3))  # nothing to gather from a huge
    empty = es.gather(batch, np.empty((10**6, 10**6, 0), np.int64), axis=2, batch_dims=2)
    assert empty.shape == (10**6, 10**6, 0)  # batch: no index work, no allocation


def _doubling(depth: int) -> list[object]:
    nested: list[object] = [1.0, 2.0]
    for _ in range(depth):
        nested = [nested, nested]  # 2**(depth + 1) elements from depth + 1 lists
    return nested


@pytest.mark.parametrize(
    ("equation", "operand"),
    [
        ("ij->", [range(10**15)]),  # NumPy's MemoryError
        ("ij->", [[range(10**12)], [range(10**12)]]),
        ("...->", _doubling(100)),  # NumPy built it for ever
    ],
)
def test_an_operand_nesting_past_the_limit_is_refused_before_numpy_converts_it(
    equation: str, operand: object
) -> None:
    """einsum's operand check sized a list by its own length only (a review)."""
    for call in (
        lambda: es.einsum(equation, operand),
        lambda: es.einsum_path(equation, operand),
        lambda: es.contract_expression("ij->", (2, 2))(operand),  # (checked before shapes)
    ):
        with pytest.raises(es.EinsumError, match="would allocate"):
            call()
