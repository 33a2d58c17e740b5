"""ppdp/process_heap.py: freed memory stays in the heap for the next call, once set; a release
run and the CLI set it; ``PPDP_KEEP_HEAP=0`` leaves the allocator alone."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys
import textwrap

import pytest

from ppdp import process_heap

# A child process frees 16 MiB it allocated (numpy takes it from malloc) and prints the free
# bytes glibc holds in its heap afterwards (mallinfo2's fordblks): kept, the 16 MiB stay there;
# with glibc's defaults the block was mapped on its own and went back to the system when freed.
_CHILD = textwrap.dedent("""
    import ctypes, ctypes.util, sys
    import numpy as np
    from ppdp.process_heap import keep_freed_memory

    class MallInfo2(ctypes.Structure):
        _fields_ = [(f, ctypes.c_size_t) for f in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")]

    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallinfo2.restype = MallInfo2
    kept = keep_freed_memory() if sys.argv[1] == "call" else None
    a = np.ones(16 << 20, dtype=np.uint8)
    del a
    print(kept, libc.mallinfo2().fordblks)
""")


def _glibc_mallinfo2() -> bool:
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    return hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallinfo2")


def _child(arg: str, keep: str | None) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "PPDP_KEEP_HEAP"}
    if keep is not None:
        env["PPDP_KEEP_HEAP"] = keep
    out = subprocess.run([sys.executable, "-c", _CHILD, arg], capture_output=True, text=True, env=env, check=True)
    kept, free = out.stdout.split()
    return kept, int(free)


@pytest.mark.skipif(not _glibc_mallinfo2(), reason="glibc's mallopt and mallinfo2 only")
def test_freed_memory_stays_in_the_heap_once_set() -> None:
    kept, free = _child("call", None)
    assert kept == "True"
    assert free >= 16 << 20  # the freed block is there for the next allocation
    untouched, free_default = _child("none", None)
    assert untouched == "None"
    assert free_default < 16 << 20  # glibc's default: mapped alone, unmapped when freed


@pytest.mark.skipif(not _glibc_mallinfo2(), reason="glibc's mallopt and mallinfo2 only")
def test_opt_out_leaves_the_allocator_alone() -> None:
    kept, free = _child("call", "0")
    assert kept == "False"
    assert free < 16 << 20


def test_set_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []

    def fake_mallopt(param: int, value: int) -> int:
        calls.append((param, value))
        return 1

    monkeypatch.setattr(process_heap, "_DONE", [])
    monkeypatch.setattr(process_heap, "_mallopt", lambda: fake_mallopt)
    monkeypatch.delenv("PPDP_KEEP_HEAP", raising=False)
    assert process_heap.keep_freed_memory() is True
    assert process_heap.keep_freed_memory() is True
    assert calls == [(process_heap.M_MMAP_THRESHOLD, process_heap.MMAP_THRESHOLD),
                     (process_heap.M_TRIM_THRESHOLD, process_heap.TRIM_THRESHOLD)]


def test_a_refused_threshold_is_reported_and_the_trim_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def refusing(param: int, value: int) -> int:
        calls.append(param)
        return 0

    monkeypatch.setattr(process_heap, "_DONE", [])
    monkeypatch.setattr(process_heap, "_mallopt", lambda: refusing)
    monkeypatch.delenv("PPDP_KEEP_HEAP", raising=False)
    assert process_heap.keep_freed_memory() is False
    assert calls == [process_heap.M_MMAP_THRESHOLD]


def test_a_release_run_and_the_cli_set_it(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from ppdp.engine.app import cli
    from ppdp.engine.release import run

    seen: list[str] = []

    def stop(spec: object) -> None:
        raise RuntimeError("stop here")

    def marks(name: str):  # noqa: ANN202
        def mark() -> bool:
            seen.append(name)
            return True
        return mark

    monkeypatch.setattr(run, "keep_freed_memory", marks("run"))
    monkeypatch.setattr(run, "method_of", stop)
    with pytest.raises(RuntimeError, match="stop here"):
        run.run_release(object())  # type: ignore[arg-type]
    assert seen == ["run"]
    monkeypatch.setattr(process_heap, "keep_freed_memory", marks("cli"))
    # any command: this one ends at once, refusing a database that does not exist
    assert cli.main(["runs", "--db", f"duckdb://{tmp_path / 'none.duckdb'}"]) == 2
    assert seen == ["run", "cli"]
