"""Issue 30, findings 4, 12 and the I/O part of 15: the run directory is opened safely and a
failure of the disk or the store is one line the user can act on.

* The lock file is opened without following a link and refused unless it is a regular file of
  one name: nothing is truncated or written through it.
* A run whose directory is deleted (or whose ``run.sqlite`` is replaced) while it writes stops
  at its next commit with one line and exit code 4, instead of writing on into a file nobody
  can open.
* A full disk mid-run (a real tmpfs where this machine may mount one, else SQLite's own page
  limit), a read-only run directory, a store with corrupted pages and ``--out`` naming a file
  are each one ``error: <what> in <where>: <why>`` line (exit 4 when the disk or the store
  failed, 2 for the bad ``--out``); ``--debug`` keeps the traceback; after space is freed the
  resumed run holds exactly the records of a clean run.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import clearsight.store._connect
from clearsight.cli import app
from clearsight.driver import run_lock
from clearsight.store import RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep
from clearsight.validate import InputError
from fixtures.hostile import can_mount, chat_server, remount, small_tmpfs

runner = CliRunner()
SCENES = ("skimage-chelsea", "skimage-coffee")
SWEEP = ["--arms", "fog", "--tasks", "identify", "--wordings", "mcq.reason", "--controls", "clean"]
#: Exit code of a command stopped by an I/O or database failure (README, "How a run ends").
EXIT_FAULT = 4


def _sweep(out: Path, *extra: str, scenes: tuple[str, ...] = SCENES) -> Result:
    return runner.invoke(
        app, ["sweep", "--scene-ids", ",".join(scenes), *SWEEP, "--out", str(out), *extra]
    )


def _error_line(result: Result, code: int) -> str:
    """The one ``error:`` line of a command that ended with ``code`` (progress bars aside)."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if "error: " in line]
    assert len(errors) == 1, result.output
    return errors[0][errors[0].index("error: ") :]


def _records(run: Path) -> dict[str, tuple[Any, ...]]:
    """Every record of a run by key: what a clean run and a resumed one must agree on."""
    with RunStore.open(run, read_only=True) as store:
        return {
            r.key: (r.status, r.error, json.dumps(r.raw, sort_keys=True), dict(r.readouts))
            for r in store.iter_records()
        }


# --------------------------------------------------------------------------------------------
# The lock file (finding 4)


@pytest.mark.parametrize("kind", ["symlink", "dangling-symlink", "directory", "fifo", "hardlink"])
def test_a_lock_file_that_is_not_a_regular_file_of_its_own_is_refused(
    tmp_path: Path, kind: str
) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    run = tmp_path / "run"
    run.mkdir()
    lock = run / ".clearsight.lock"
    if kind == "symlink":
        lock.symlink_to(precious)
    elif kind == "dangling-symlink":
        lock.symlink_to(tmp_path / "created-through-the-link")
    elif kind == "directory":
        lock.mkdir()
    elif kind == "fifo":
        os.mkfifo(lock)
    else:
        os.link(precious, lock)
    with (
        pytest.raises(InputError, match=r"the run's lock file .* is not a regular file of its own"),
        run_lock(run),
    ):
        pass
    assert precious.read_text() == "keep me\n"
    assert not (tmp_path / "created-through-the-link").exists()


def test_sweep_refuses_a_linked_lock_file_with_one_line(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / ".clearsight.lock").symlink_to(precious)
    line = _error_line(_sweep(run, scenes=SCENES[:1]), 2)
    assert line.endswith("(a symbolic link); clearsight creates it: remove it and rerun")
    assert precious.read_text() == "keep me\n"
    assert not (run / "run.sqlite").exists()


# --------------------------------------------------------------------------------------------
# The run directory deleted or its store replaced mid-run (finding 12)


@pytest.mark.parametrize("fault", ["deleted", "replaced"])
def test_a_run_whose_store_goes_away_mid_run_stops_with_one_line(
    tmp_path: Path, fault: str
) -> None:
    run = tmp_path / "run"

    def pull_the_rug(request: int) -> None:
        if request != 2:  # request 1 is the preflight's, before the run directory exists
            return
        if fault == "deleted":
            shutil.rmtree(run)
        else:  # a copy put in its place: the same bytes, another file
            shutil.copy(run / "run.sqlite", tmp_path / "copy.sqlite")
            os.replace(tmp_path / "copy.sqlite", run / "run.sqlite")

    with chat_server() as chat:
        chat.on_request = pull_the_rug
        result = _sweep(run, "--model", f"openai:{chat.url}#m", scenes=SCENES[:1])
    line = _error_line(result, EXIT_FAULT)
    what = "removed" if fault == "deleted" else "replaced"
    assert line.startswith(f"error: the run store was {what} in {run / 'run.sqlite'}: ")
    assert "deleted or moved, or run.sqlite replaced, while this run wrote it" in line
    assert "rerun the command to start it again" in line
    if fault == "deleted":
        assert not run.exists()  # nothing was written to a directory of the same name


# --------------------------------------------------------------------------------------------
# A full disk, a read-only directory, corrupted pages, --out naming a file (finding 15)


@contextmanager
def _full_disk(tmp_path: Path, layer: str, size_kib: int) -> Iterator[Callable[[], None]]:
    """A directory whose disk holds about ``size_kib`` KiB: a real tmpfs, or (``page-limit``)
    SQLite told to grow the store to no more pages than fit, which fails exactly as a full
    disk does. Yields the function that frees the space."""
    where = tmp_path / "disk"
    if layer == "tmpfs":
        with small_tmpfs(where, size_kib):
            yield lambda: remount(where, "rw,size=16m")
        return
    configure = clearsight.store._connect._configure
    limit = {"pages": size_kib // 4}

    def limited(conn: sqlite3.Connection) -> None:
        configure(conn)
        if limit["pages"]:
            conn.execute(f"PRAGMA max_page_count = {limit['pages']}")

    where.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(clearsight.store._connect, "_configure", limited)
        yield lambda: limit.update(pages=0)


#: Each fault layer with the disk sizes (KiB) tried, smallest first: a tmpfs holds the WAL and
#: the lock file too; the page limit counts the store's own pages.
LAYERS = [
    pytest.param(
        "tmpfs",
        range(128, 512, 16),
        marks=pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root"),
    ),
    pytest.param("page-limit", range(16, 256, 4)),
]


@pytest.mark.parametrize(("layer", "sizes"), LAYERS)
def test_a_full_disk_mid_run_is_one_line_and_the_resume_matches_a_clean_run(
    tmp_path: Path, layer: str, sizes: range
) -> None:
    clean = tmp_path / "clean"
    run_sweep(
        SweepConfig(
            scene_ids=SCENES,
            arms=("fog",),
            tasks=("identify",),
            wordings=("mcq.reason",),
            controls=("clean",),
        ),
        clean,
        progress=False,
    )
    for size_kib in sizes:  # the smallest disk where the run stops mid-way
        with _full_disk(tmp_path, layer, size_kib) as free_space:
            run = tmp_path / "disk" / "run"
            result = _sweep(run)
            if result.exit_code == 0:
                pytest.fail(f"the run fitted in {size_kib} KiB: no disk was full")
            line = _error_line(result, EXIT_FAULT)
            assert line.endswith(  # or "open", when the disk filled before the first commit
                f"the run store in {run / 'run.sqlite'}: database or disk is full (free some "
                "space, then rerun the command to resume: what was committed is kept)"
            )
            free_space()
            committed = _committed(run)
            if not committed:  # it stopped before its first commit: try a larger disk
                shutil.rmtree(run)
                continue
            assert line.startswith("error: cannot write the run store in ")
            resumed = _sweep(run)
            assert resumed.exit_code == 0, resumed.output
            assert _records(run) == _records(clean)
            assert len(_records(run)) > committed
            return
    pytest.fail("no disk size stopped the run mid-way")


def _committed(run: Path) -> int:
    """The ``ok`` records a run committed (0 when the disk filled before its schema)."""
    try:
        with RunStore.open(run, read_only=True) as store:
            return store.count_records(status="ok")
    except InputError:  # "an empty database, not a clearsight run"
        return 0


@pytest.mark.skipif(os.geteuid() == 0 and not can_mount(), reason="root ignores permissions")
def test_a_read_only_run_directory_is_one_line(tmp_path: Path) -> None:
    where = tmp_path / "disk"
    with _read_only_place(where) as (make_read_only, run):
        assert _sweep(run, scenes=SCENES[:1]).exit_code == 0
        make_read_only()
        line = _error_line(_sweep(run, scenes=SCENES[:1]), EXIT_FAULT)
        assert line.startswith(f"error: cannot open the run's lock file in {run}/.clearsight.lock:")
        line = _error_line(runner.invoke(app, ["report", str(run)]), EXIT_FAULT)
        assert "Read-only file system" in line or "Permission denied" in line
        debug = runner.invoke(app, ["--debug", "report", str(run)])
        assert debug.exit_code == EXIT_FAULT
        assert "Traceback (most recent call last)" in debug.output
        assert debug.output.strip().splitlines()[-1] == line


@contextmanager
def _read_only_place(where: Path) -> Iterator[tuple[Callable[[], None], Path]]:
    """A directory for a run, and the function that makes it read-only (a tmpfs remounted
    read-only when this process may mount, else the permissions taken away)."""
    if can_mount():
        with small_tmpfs(where, 16 * 1024):
            yield (lambda: remount(where, "ro")), where / "run"
        return
    where.mkdir()
    run = where / "run"

    def make_read_only() -> None:
        for path in (run, where):
            path.chmod(0o555)

    try:
        yield make_read_only, run
    finally:
        for path in (where, run):
            path.chmod(0o755)


def test_a_store_with_corrupted_pages_is_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _sweep(run, scenes=SCENES[:1]).exit_code == 0
    db = run / "run.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'records'").fetchone()
    with db.open("r+b") as f:  # the records table's first page: its header turned to garbage
        f.seek((root[0] - 1) * page_size)
        f.write(b"\xff" * 16)
    line = _error_line(runner.invoke(app, ["report", str(run)]), EXIT_FAULT)
    assert line == (
        f"error: database error in {db}: database disk image is malformed (the store is "
        "damaged: restore run.sqlite from a copy, or start over with --fresh)"
    )
    resumed = _error_line(_sweep(run, scenes=SCENES[:1]), EXIT_FAULT)
    assert "database disk image is malformed" in resumed
    assert str(db) in resumed


def test_out_naming_a_file_is_one_line_and_leaves_it(tmp_path: Path) -> None:
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n")
    line = _error_line(_sweep(out, scenes=SCENES[:1]), 2)
    assert line == f"error: {out} is a file, not a run directory: give a new directory or a run's"
    assert out.read_text() == "my notes\n"


def test_the_fault_layers_are_real() -> None:
    """The tmpfs helper mounts a file system of the size asked for (where it may)."""
    if not can_mount():
        pytest.skip("mounting a tmpfs needs root")
    where = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True).stdout.strip())
    with small_tmpfs(where, 256):
        assert shutil.disk_usage(where).total == 256 * 1024
    where.rmdir()
