"""The commands around the hub datasets: ``clearsight instances`` / ``problems`` (what a source
would load), a run refusing a wrong schema or a bad row in one line before anything is created,
and ``clearsight fetch --dataset`` (hub snapshots and COCO val2017, verified; offline: one line)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.datasets.fetch import Archive, fetch_coco, fetch_dataset
from clearsight.datasets.hub import HUB_SPECS
from clearsight.datasets.snapshot import FETCH_RECORD
from clearsight.validate import InputError
from fixtures.hub_snapshots import FIXTURES, build_snapshot

pytest.importorskip("datasets")
runner = CliRunner()


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "clearsight"
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return cache


def _one_error_line(output: str) -> str:
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("error: ")
    return lines[0]


# ----------------------------------------------------------------- instances, problems


def test_instances_prints_count_fields_and_first_rows_writing_nothing(tmp_path: Path) -> None:
    root = build_snapshot("mmstar", tmp_path / "mmstar")
    args = ["instances", "--instances", str(root), "--dataset", "mmstar", "--show", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "loader: mmstar" in out
    assert "instances: 2" in out
    assert "  id                     <- index" in out
    assert "  options                <- question (lettered options in its text)" in out
    assert "first 1:\n  mmstar/0 [coarse perception] gold A: Which option describe" in out
    assert "(A) The suitcase is on the book." in out
    assert not (tmp_path / "clearsight").exists()  # no image written


def test_instances_lists_refused_rows_by_id(tmp_path: Path) -> None:
    columns = {**FIXTURES["cvqa"].columns, "Label": [4, 0]}
    root = build_snapshot("cvqa", tmp_path / "cvqa", columns)
    result = runner.invoke(app, ["instances", "--instances", str(root), "--dataset", "cvqa"])
    assert result.exit_code == 0, result.output
    assert "instances: 1\nrefused: 1 row(s)\n  cvqa row 5919991144272485961_0 refused: Label 4" in (
        result.output
    )


def test_instances_cuts_a_long_question_as_problems_does(tmp_path: Path) -> None:
    """A 1 MB question or option is listed cut to one short line, not printed in full."""
    row = {"id": "q", "image": "a.png", "question": "why " * 250_000, "gold": "A"}
    source = tmp_path / "big.jsonl"
    source.write_text(json.dumps({**row, "options": ["x" * 10_000, "y"]}) + "\n")
    result = runner.invoke(app, ["instances", "--instances", str(source)])
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("  q [")]
    assert line.startswith("  q [] gold A: why why")
    assert len(line) <= 2 * 160 + 5
    assert len(result.output) < 2_000


def test_instances_of_the_alias_route_and_the_bundled_set(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps(
            {"index": 3, "question": "Q? Options: A: x, B: y", "answer": "B", "image": "a.png"}
        )
        + "\n"
    )
    result = runner.invoke(app, ["instances", "--instances", str(rows), "--dataset", "mmstar"])
    assert result.exit_code == 0, result.output
    assert "instances: 1" in result.output
    assert "id                     <- index, id (first present)" in result.output
    bundled = runner.invoke(app, ["instances", "--show", "0"])
    assert bundled.exit_code == 0, bundled.output
    assert "loader: bundled" in bundled.output


def test_problems_checks_hub_and_jsonl_benchmarks(tmp_path: Path) -> None:
    datasets = tmp_path / "datasets"
    build_snapshot("MathVista", datasets / "MathVista")
    (datasets / "A-OKVQA").mkdir()
    record = {
        "question_id": "q1",
        "question": "What?",
        "choices": ["a", "b"],
        "correct_choice_idx": 1,
        "image": "x.jpg",
    }
    (datasets / "A-OKVQA" / "val.jsonl").write_text(json.dumps(record) + "\n")
    args = ["problems", "--datasets", str(datasets), "--benchmarks", "MathVista,A-OKVQA"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "MathVista: " in out
    assert "(hub snapshot of AI4Math/MathVista (split testmini) at revision 2b6ad69445fb" in out
    assert "problems: 2" in out
    assert "  MathVista/1 [letter, image] gold B: Find the measure of angle 1. A. 145°" in out
    assert "  MathVista/2 [number, image] gold 12: How many bars are there?" in out
    assert "A-OKVQA: " in out
    assert "(JSONL layout)" in out
    assert "  A-OKVQA/q1 [letter, image] gold B" in out
    assert not (tmp_path / "clearsight").exists()
    bad = runner.invoke(app, ["problems", "--benchmarks", "MathVista"])
    assert (
        _one_error_line(bad.output)
        == "error: --benchmarks needs --datasets (a folder of copies, or hf:)"
    )


# ---------------------------------------------------------- refusals before a run starts


def _as_files_of(name: str, other: str, where: Path) -> Path:
    """``other``'s replica with its file renamed to ``name``'s split file."""
    root = build_snapshot(other, where)
    target = root / FIXTURES[name].file
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(root / FIXTURES[other].file), str(target))
    return root


def test_a_probe_run_on_another_datasets_schema_is_one_line_and_creates_nothing(
    tmp_path: Path,
) -> None:
    root = _as_files_of("mmstar", "cvqa", tmp_path / "mmstar")
    out = tmp_path / "run"
    args = ["probe", "run", "--instances", str(root), "--dataset", "mmstar", "--out", str(out)]
    models = ["--reasoner", _script(tmp_path), "--sensor", _script(tmp_path), "--judge", "exact"]
    result = runner.invoke(app, [*args, *models])
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.output)
    assert line.startswith(f"error: mmstar: {root / 'mmstar.parquet'} is not the schema of ")
    assert (
        "Lin-Chen/MMStar (val, split val, revision bc98d668301d): found columns image, ID," in line
    )
    assert "expected index, question, answer, image, category (missing index, question, " in line
    assert not out.exists()
    assert not (tmp_path / "clearsight").exists()


def _script(tmp_path: Path) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text(json.dumps({"texts": ["A"]}) + "\n")
    return f"scripted:{path}"


def _build_bench(tmp_path: Path) -> tuple[list[str], Path]:
    """A build-bench command line on ``tmp_path/datasets``'s MathVista (its generator a
    script: the problems are loaded before any model runs) and its run folder."""
    run = tmp_path / "run"
    args = [
        "grounding",
        "build-bench",
        "--datasets",
        str(tmp_path / "datasets"),
        "--benchmarks",
        "MathVista",
    ]
    args += ["--generator", _script(tmp_path), "--out", str(tmp_path / "b.jsonl")]
    return [*args, "--run-dir", str(run)], run


def test_a_grounding_build_on_another_datasets_schema_is_one_line_and_creates_nothing(
    tmp_path: Path,
) -> None:
    _as_files_of("MathVista", "MMK12", tmp_path / "datasets" / "MathVista")
    args, run = _build_bench(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.output)
    assert "error: MathVista: " in line
    assert "AI4Math/MathVista (default, split testmini, revision 2b6ad69445fb): found " in line
    assert "found columns id, subject, image, question, answer; " in line
    assert "(missing pid, choices, decoded_image)" in line
    assert not run.exists()
    assert not (tmp_path / "b.jsonl").exists()


def test_a_row_with_a_gold_outside_its_options_stops_a_build_by_id(tmp_path: Path) -> None:
    columns = {**FIXTURES["MathVista"].columns, "answer": ["36°", "12"]}
    build_snapshot("MathVista", tmp_path / "datasets" / "MathVista", columns)
    args, run = _build_bench(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.output)
    assert line.startswith(
        "error: MathVista row 1 refused: answer '36°' is not the text of exactly"
    )
    assert not run.exists()


# ----------------------------------------------------------------------- fetch --dataset


def _fake_hub(tmp_path: Path, name: str, columns: dict[str, list[Any]] | None = None) -> Any:
    """A snapshot_download that copies ``name``'s replica, as the hub would serve it."""
    source = build_snapshot(name, tmp_path / "served" / name, columns)
    calls: list[dict[str, Any]] = []

    def download(**kwargs: Any) -> str:
        calls.append(kwargs)
        dest = Path(kwargs["local_dir"])
        for pattern in kwargs["allow_patterns"]:
            for path in source.glob(pattern):
                (dest / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, dest / path.relative_to(source))
        return str(dest)

    download.calls = calls  # type: ignore[attr-defined]
    return download


def test_fetch_dataset_downloads_the_split_verifies_and_is_idempotent(tmp_path: Path) -> None:
    download = _fake_hub(tmp_path, "MathVista")
    result = fetch_dataset("MathVista", download=download)
    assert result.status == "fetched", result.detail
    assert "2 rows of AI4Math/MathVista (split testmini) at revision 2b6ad69445fb" in result.detail
    (call,) = download.calls
    spec = HUB_SPECS["MathVista"]
    assert call["repo_id"] == "AI4Math/MathVista"
    assert call["repo_type"] == "dataset"
    assert call["revision"] == spec.revision  # a full hash: fetched exactly
    assert call["allow_patterns"] == ["data/testmini-*.parquet", "README.md"]
    dest = tmp_path / "clearsight" / "datasets" / "MathVista"
    record = json.loads((dest / FETCH_RECORD).read_text())
    (file,) = record["files"]
    data = (dest / file).read_bytes()
    assert record["files"][file] == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert (record["hub_id"], record["rows"]) == ("AI4Math/MathVista", 2)
    assert fetch_dataset("MathVista", download=download).status == "ready"
    assert len(download.calls) == 1
    (dest / file).write_bytes(data[:-1] + b"\0")  # altered: fetched again
    assert fetch_dataset("MathVista", download=download).status == "fetched"
    # the fetched folder is what the loaders and the listing read
    result = runner.invoke(
        app, ["problems", "--datasets", str(dest.parent), "--benchmarks", "MathVista"]
    )
    assert "problems: 2" in result.output, result.output


def test_a_fetch_of_an_unpinned_revision_asks_for_main(tmp_path: Path) -> None:
    download = _fake_hub(tmp_path, "seedbench")
    assert fetch_dataset("seedbench", download=download).status == "fetched"
    assert download.calls[0]["revision"] is None


def test_a_fetched_schema_that_is_not_followed_is_refused(tmp_path: Path) -> None:
    download = _fake_hub(tmp_path, "mmstar")
    shutil.rmtree(tmp_path / "served" / "mmstar")
    _as_files_of("mmstar", "cvqa", tmp_path / "served" / "mmstar")
    with pytest.raises(InputError, match=r"mmstar: .* is not the schema of Lin-Chen/MMStar"):
        fetch_dataset("mmstar", download=download)


def test_fetch_offline_says_in_one_line_what_to_do() -> None:
    """A dataset named with --dataset that cannot be fetched is exit 2, as --help says (it
    was exit 0, "skipped")."""
    result = runner.invoke(app, ["fetch", "--dataset", "mmstar"])
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.output)
    assert line.startswith("error: cannot fetch dataset mmstar: the hub is not reachable (")
    assert "run `huggingface-cli download Lin-Chen/MMStar --repo-type dataset --include " in line
    bad = runner.invoke(app, ["fetch", "--dataset", "nope"])
    assert bad.exit_code == 2
    assert _one_error_line(bad.output).startswith("error: unknown dataset 'nope'; fetchable: ")


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _archives(tmp_path: Path, extra: dict[str, bytes] | None = None) -> list[Archive]:
    """Tiny COCO-shaped archives served from file:// URLs, with their MD5s."""
    annotations = {"images": [{"id": 1, "file_name": "000000000001.jpg"}], "annotations": []}
    files = {
        "annotations_trainval2017.zip": _zip(
            {
                "annotations/instances_val2017.json": json.dumps(annotations).encode(),
                "annotations/captions_val2017.json": b"{}",
            }
        ),
        "val2017.zip": _zip({"val2017/000000000001.jpg": b"jpeg", **(extra or {})}),
    }
    out = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        keep = "val2017/" if name == "val2017.zip" else "annotations/instances_val2017.json"
        url = (tmp_path / name).as_uri()
        out.append(Archive(url, hashlib.md5(data, usedforsecurity=False).hexdigest(), keep))
    return out


def test_fetch_coco_checks_md5s_unpacks_what_the_sweep_reads_and_verifies(tmp_path: Path) -> None:
    dest = tmp_path / "coco"
    archives = _archives(tmp_path)
    assert fetch_coco(dest, archives=archives).status == "fetched"
    assert (dest / "val2017" / "000000000001.jpg").read_bytes() == b"jpeg"
    assert (dest / "annotations" / "instances_val2017.json").is_file()
    assert not (dest / "annotations" / "captions_val2017.json").exists()
    assert fetch_coco(dest, archives=[]).status == "ready"
    (dest / "val2017" / "000000000001.jpg").unlink()
    wrong = [Archive(a.url, "0" * 32, a.keep) for a in archives]
    with pytest.raises(InputError, match=r"arrived with MD5 .*, not the published 0{32}"):
        fetch_coco(dest, archives=wrong)
    assert not (dest / "val2017" / "000000000001.jpg").exists()


def test_fetch_coco_refuses_a_member_outside_its_folder(tmp_path: Path) -> None:
    archives = _archives(tmp_path, {"val2017/../../escape.txt": b"x"})
    with pytest.raises(InputError, match="holds a member outside its folder"):
        fetch_coco(tmp_path / "coco", archives=archives)
    assert not (tmp_path / "escape.txt").exists()


def test_fetch_coco_offline_is_one_line(tmp_path: Path) -> None:
    def unreachable(url: str, timeout: float) -> Any:
        raise OSError("[Errno -2] Name or service not known")

    with pytest.raises(InputError) as err:
        fetch_coco(tmp_path / "coco", opener=unreachable)
    assert list(tmp_path.iterdir()) == []  # nothing left behind
    assert str(err.value).startswith(
        "cannot fetch dataset coco: images.cocodataset.org is not reachable (OSError: [Errno -2]"
    )
    assert "\n" not in str(err.value)
