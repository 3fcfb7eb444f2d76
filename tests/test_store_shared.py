"""A run read once while it is in use (clearsight.store.read_shared): two threads reading one
run at once read it once and share the value; a value nobody holds is read again; a run that
changed is read again."""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from clearsight.store import Record, RunStore, read_shared


@dataclass(frozen=True)
class _Read:
    """A reader's value (a dataclass instance, as the protocols' are)."""

    n: int


def _counting(reads: list[Path], pause: float = 0.0):
    @read_shared
    def read(run_dir: Path) -> _Read:
        reads.append(Path(run_dir))
        time.sleep(pause)
        return _Read(len(reads))

    return read


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    with RunStore.open(run) as store:
        store.add_items([("k1", "toy", {"n": 1}), ("k2", "toy", {"n": 2})])
        store.write_records([Record("k1", "ok", None, {}, {"p": 0.5}, 0.1)])
    return run


def test_two_threads_reading_one_run_at_once_read_it_once(tmp_path: Path) -> None:
    run, reads = _run(tmp_path), []
    read = _counting(reads, pause=0.3)
    got: list[_Read] = []
    threads = [threading.Thread(target=lambda: got.append(read(run))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reads) == 1
    assert got[0] is got[1]


def test_a_value_is_shared_while_held_only_and_a_changed_run_is_read_again(
    tmp_path: Path,
) -> None:
    run, reads = _run(tmp_path), []
    read = _counting(reads)
    first = read(run)
    assert read(str(run)) is first  # the same directory, named either way
    assert read(run.parent / "." / "run") is first
    del first
    gc.collect()
    second = read(run)
    assert (len(reads), second.n) == (2, 2)  # nobody held the first: read again
    with RunStore.open(run) as store:
        store.write_records([Record("k2", "ok", None, {}, {"p": 0.25}, 0.1)])
    third = read(run)
    assert third is not second
    assert len(reads) == 3
    other = _run(tmp_path / "other")
    assert read(other) is not third  # another run: its own read
