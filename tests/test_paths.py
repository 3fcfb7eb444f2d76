"""Paths that stay where they are asked (issue 48): a path read from a source resolves inside it,
the web page serves only files inside its run directory, and a writer never follows a symbolic
link out of the folder it writes into — one check each, shared by every reader and writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from clearsight.grounding.bench.file import TgsBench, write_bench
from clearsight.paths import resolves_inside, write_target
from clearsight.report.output import write_atomic
from clearsight.validate import InputError


def test_resolves_inside_follows_dots_and_links(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f").write_text("x")
    (tmp_path / "out").write_text("x")
    (root / "in").symlink_to(root / "d" / "f")
    (root / "out").symlink_to(tmp_path / "out")
    (root / "gone").symlink_to(tmp_path / "missing")
    assert resolves_inside(root, "d/../d/f") == (root / "d" / "f").resolve()
    assert resolves_inside(root, "in") == (root / "d" / "f").resolve()
    assert resolves_inside(root, root / "d" / "f") == (root / "d" / "f").resolve()
    for bad in ("../out", "out", "gone", str(tmp_path / "out"), ".", "", "d/\x00"):
        assert resolves_inside(root, bad) is None, bad


def test_a_writer_refuses_a_link_out_of_its_folder_dangling_or_not(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "dangling").symlink_to(tmp_path / "nowhere")
    (folder / "inside").symlink_to(folder / "target")
    with pytest.raises(InputError, match=f"refused to write {folder / 'dangling'}: it is a sym"):
        write_target(folder / "dangling")
    assert write_target(folder / "inside") == folder / "inside"  # a link inside is followed
    assert write_target(folder / "new") == folder / "new"


def test_a_report_file_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    """write_atomic's temporary file, a dangling link to a file outside: refused, nothing
    written outside (every report, card, board and compare page is written so)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / ".report.html.tmp").symlink_to(tmp_path / "outside.html")
    with pytest.raises(InputError, match="refused to write"):
        write_atomic(run / "report.html", "<html></html>")
    assert not (tmp_path / "outside.html").exists()


def test_a_bench_manifest_is_never_written_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "bench.manifest.json").symlink_to(tmp_path / "outside.json")
    with pytest.raises(InputError, match="refused to write"):
        write_bench(TgsBench(()), tmp_path / "b" / "bench.jsonl")
    assert not (tmp_path / "outside.json").exists()
