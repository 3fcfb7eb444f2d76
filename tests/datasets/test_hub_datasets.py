"""Each hub loader on a replica of its dataset's published schema (tests/fixtures/hub_snapshots):
read as a snapshot folder, from the datasets cache with HF_DATASETS_OFFLINE=1, and from the
hub cache; the rows a wrong schema or a gold outside the options get refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.datasets.hub import HUB_SPECS, hub_spec
from clearsight.datasets.rows import LETTERS, hub_rows, lettered_options
from clearsight.datasets.snapshot import is_hub_source, locate, snake_case
from clearsight.grounding.problems.hub import hub_problems, load_benchmark
from clearsight.grounding.problems.problem import Problem
from clearsight.probe.instances import Instance
from clearsight.probe.sources.hub import hub_instances
from clearsight.probe.sources.load import load_instances
from clearsight.validate import InputError
from fixtures.hub_snapshots import (
    FIXTURES,
    Expected,
    build_datasets_cache,
    build_snapshot,
    png,
)

pytest.importorskip("datasets")

PROBE = sorted(n for n in FIXTURES if HUB_SPECS[n].protocol == "probe")
GROUNDING = sorted(n for n in FIXTURES if HUB_SPECS[n].protocol == "grounding")


@pytest.fixture(autouse=True)
def _offline_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Images into a fresh clearsight cache; both Hugging Face caches empty and offline."""
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(tmp_path / "clearsight"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _load(name: str, source: str | Path) -> list[Instance] | list[Problem]:
    """The loader's records from ``source`` (a grounding benchmark's folder is named for it)."""
    if HUB_SPECS[name].protocol == "probe":
        return load_instances(source, name)
    if str(source).startswith("hf:"):
        return load_benchmark(name, "hf:")
    return load_benchmark(name, Path(source).parent)


def _check(name: str, got: list[Instance] | list[Problem]) -> None:
    """``got`` is the fixture's expected rows: ids, question, options, gold, image bytes."""
    expected: tuple[Expected, ...] = FIXTURES[name].expected
    assert [r.id for r in got] == [f"{name}/{e.id}" for e in expected]
    for record, want in zip(got, expected, strict=True):
        assert record.question == want.question
        assert record.options == want.options
        assert record.gold == want.gold
        if want.image is None:
            assert record.image is None
        else:
            assert record.image is not None
            assert Path(record.image).read_bytes() == png(want.image)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_each_loader_reads_its_snapshot_folder(tmp_path: Path, name: str) -> None:
    root = build_snapshot(name, tmp_path / "datasets" / name)
    assert is_hub_source(root)
    _check(name, _load(name, root))


#: The loaders whose rows hold their images (GQA's are a config of their own, which a datasets
#: cache folder does not hold beside the questions).
ONE_CONFIG = sorted(n for n in FIXTURES if HUB_SPECS[n].image_table is None)


@pytest.mark.parametrize("name", ONE_CONFIG)
def test_each_loader_reads_the_datasets_cache_offline(tmp_path: Path, name: str) -> None:
    snapshot = build_snapshot(name, tmp_path / "repo" / HUB_SPECS[name].hub_id)
    prepared = build_datasets_cache(name, snapshot, tmp_path / "hf-datasets")
    assert prepared.parent.parent.parent.name.endswith(snake_case(snapshot.name))
    _check(name, _load(name, "hf:"))  # found by repository id in HF_DATASETS_CACHE
    located = locate(HUB_SPECS[name], prepared)  # the prepared folder named directly
    assert located.layout == "datasets cache"
    assert all(f.suffix == ".arrow" for f in located.files)


def test_datasets_reads_the_replica_caches_offline_as_the_loaders_do(tmp_path: Path) -> None:
    """The cache layout the fixtures build is the real one: datasets itself, offline, loads
    every replica by repository id, with the ids and golds the loaders read."""
    cache = tmp_path / "hf-datasets"
    for name in FIXTURES:
        build_datasets_cache(
            name, build_snapshot(name, tmp_path / "r" / HUB_SPECS[name].hub_id), cache
        )
    specs = {n: [HUB_SPECS[n].hub_id, HUB_SPECS[n].config, HUB_SPECS[n].split] for n in FIXTURES}
    script = (
        "import json, sys, datasets\n"
        "assert datasets.config.HF_HUB_OFFLINE\n"
        "out = {}\n"
        "for name, (repo, config, split) in json.loads(sys.argv[1]).items():\n"
        "    ds = datasets.load_dataset(repo, config, split=split)\n"
        "    out[name] = len(ds)\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(specs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts == {n: len(next(iter(FIXTURES[n].columns.values()))) for n in FIXTURES}


def test_a_hub_cache_repository_folder_reads_its_snapshot(tmp_path: Path) -> None:
    """huggingface-cli download without --local-dir: datasets--OWNER--NAME/snapshots/SHA."""
    repo = tmp_path / "hf-hub" / "datasets--Lin-Chen--MMStar"
    build_snapshot("mmstar", repo / "snapshots" / "0123abcd")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    _check("mmstar", load_instances(repo, "mmstar"))
    _check("mmstar", load_instances("hf:Lin-Chen/MMStar", "mmstar"))
    assert locate(HUB_SPECS["mmstar"], repo).layout == "hub cache"


def test_snake_case_names_cache_folders_as_datasets_does() -> None:
    from datasets.naming import camelcase_to_snakecase

    names = ["MathVista", "MMStar", "SEED-Bench", "DynaMath_Sample", "MMMU_Pro", "cvqa", "A-OKVQA"]
    for name in [*names, *(s.hub_id.split("/")[1] for s in HUB_SPECS.values())]:
        assert snake_case(name) == camelcase_to_snakecase(name), name


# ------------------------------------------------------------------------- refusals


def _assert_one_line_schema_error(exc: InputError, name: str) -> None:
    text = str(exc)
    spec = hub_spec(name)
    assert "\n" not in text
    assert text.startswith(f"{name}: ")
    assert "found columns" in text
    assert f"expected {', '.join(spec.columns)}" in text
    assert spec.revision[:12] in text


@pytest.mark.parametrize(("name", "other"), [("mmstar", "cvqa"), ("MathVista", "MMK12")])
def test_another_datasets_schema_at_the_same_files_is_one_line(
    tmp_path: Path, name: str, other: str
) -> None:
    """The other dataset's rows written under this dataset's file name: refused by schema."""
    root = build_snapshot(other, tmp_path / "datasets" / name)
    (root / FIXTURES[other].file).rename(root / "x.parquet")
    target = root / FIXTURES[name].file
    target.parent.mkdir(parents=True, exist_ok=True)
    (root / "x.parquet").rename(target)
    with pytest.raises(InputError) as err:
        _load(name, root)
    _assert_one_line_schema_error(err.value, name)
    assert not (tmp_path / "clearsight").exists()  # no image written


def test_another_datasets_snapshot_is_one_line(tmp_path: Path) -> None:
    """A MathVista snapshot named as MMStar's: its files are not MMStar's, its columns shown."""
    root = build_snapshot("MathVista", tmp_path / "mv")
    with pytest.raises(InputError) as err:
        load_instances(root, "mmstar")
    _assert_one_line_schema_error(err.value, "mmstar")
    assert "pid, question, image, decoded_image" in str(err.value)


def _refused(name: str, tmp_path: Path, **changes: list[Any]) -> str:
    """The error of loading ``name``'s replica with some columns replaced."""
    columns = {**FIXTURES[name].columns, **changes}
    root = build_snapshot(name, tmp_path / "datasets" / name, columns)
    with pytest.raises(InputError) as err:
        _load(name, root)
    assert not (tmp_path / "clearsight").exists()
    return str(err.value)


def test_a_gold_outside_the_options_is_refused_by_row_id(tmp_path: Path) -> None:
    assert "cvqa row 5919991144272485961_0 refused: Label 4 is not the index of one of its 4" in (
        _refused("cvqa", tmp_path / "a", Label=[4, 0])
    )
    assert "cvqa row 5919991144272485961_1 refused: Label -1" in (
        _refused("cvqa", tmp_path / "b", Label=[1, -1])
    )
    text = _refused("mmstar", tmp_path / "c", answer=["A", "C"])
    assert "mmstar row 1 refused: answer 'C' names C, not among its options" in text
    text = _refused("MathVista", tmp_path / "d", answer=["35", "12"])
    assert "MathVista row 1 refused: answer '35' is not the text of exactly one option" in text
    text = _refused("A-OKVQA", tmp_path / "e", correct_choice_idx=[7])
    assert "A-OKVQA row 22jbM6gDxdaMaunuzgrsBB refused" in text
    assert "refused: answer 'E' names E" in _refused("MMMU-Pro", tmp_path / "f", answer=["E"])
    text = _refused("seedbench", tmp_path / "g", answer=["C", "A", "maybe"])
    assert "seedbench row 103 refused: answer 'maybe' is not a letter" in text
    text = _refused("figureqa", tmp_path / "h", qa=[[{"question": "Is it?", "answer": "2"}]] * 2)
    assert "figureqa row 0/0 refused: answer '2' is not yes or no" in text
    text = _refused("LogicVista", tmp_path / "i", answer=["D", "A, E"])
    assert "LogicVista row 2 refused: answer 'A, E' names E" in text


def test_refused_rows_are_collected_for_a_listing(tmp_path: Path) -> None:
    columns = {**FIXTURES["cvqa"].columns, "Label": [4, 0]}
    root = build_snapshot("cvqa", tmp_path / "cvqa", columns)
    refused: list[str] = []
    (inst,) = hub_instances("cvqa", root, write=False, refused=refused)
    assert inst.id == "cvqa/5919991144272485961_1"
    assert len(refused) == 1
    assert refused[0].startswith("cvqa row 5919991144272485961_0 refused")
    assert not Path(inst.image).exists()  # write=False: nothing in the cache


def test_grounding_rows_without_options_are_free_answers(tmp_path: Path) -> None:
    build_snapshot("MathVista", tmp_path / "datasets" / "MathVista")
    free = hub_problems("MathVista", tmp_path / "datasets")[1]
    assert (free.answer_type, free.gold, free.options) == ("number", "12", ())
    choice = load_benchmark(
        "LogicVista", build_snapshot("LogicVista", tmp_path / "d2" / "LogicVista").parent
    )
    assert [(p.answer_type, p.gold) for p in choice] == [("letter", "D"), ("text", "A, C")]


def test_the_limit_counts_loaded_rows(tmp_path: Path) -> None:
    root = build_snapshot("seedbench", tmp_path / "s")
    assert [i.id for i in load_instances(root, "seedbench", limit=1)] == ["seedbench/101"]
    rows = list(hub_rows(locate(HUB_SPECS["seedbench"], root)))
    assert [r.id for r in rows] == ["101", "103"]  # the video row is not kept


def test_a_plain_folder_of_rows_keeps_the_alias_route(tmp_path: Path) -> None:
    """No hub card or cache marker: the user's own rows, read with the column aliases."""
    (tmp_path / "rows").mkdir()
    (tmp_path / "rows" / "README.md").write_text("# my rows\n")
    assert not is_hub_source(tmp_path / "rows")
    assert is_hub_source("hf:")


def test_a_missing_source_says_how_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist; `clearsight fetch --dataset Geo3K`"):
        load_benchmark("Geo3K", tmp_path)
    with pytest.raises(InputError, match="neither in the hub cache"):
        load_instances("hf:", "mmstar")
    with pytest.raises(InputError, match="no hub loader for 'reasonvqa'"):
        hub_spec("reasonvqa")


# ------------------------------------------- one loader rule: ids, images, paths (issue 48)

_IDS = sorted(n for n in FIXTURES if HUB_SPECS[n].id is not None and HUB_SPECS[n].explode is None)


@pytest.mark.parametrize("name", _IDS)
def test_a_repeated_id_is_refused_naming_both_rows_before_any_image(
    tmp_path: Path, name: str
) -> None:
    """Two different rows under one id would be run and stored as one: refused, naming both
    rows, before an image is cached (also for a loader that refused them after caching)."""
    spec = HUB_SPECS[name]
    assert spec.id is not None
    columns = {column: values * 2 for column, values in FIXTURES[name].columns.items()}
    ids = [columns[spec.id][0]] * len(columns[spec.id])
    root = build_snapshot(name, tmp_path / "datasets" / name, {**columns, spec.id: ids})
    with pytest.raises(InputError) as err:
        _load(name, root)
    text = str(err.value)
    assert text.startswith(f"duplicate {'instance' if spec.protocol == 'probe' else 'problem'}")
    assert f"'{name}/{ids[0]}'" in text
    assert re.search(r"row \d+ and again in .* row \d+ \(ids must be unique\)", text), text
    assert not (tmp_path / "clearsight").exists()


def test_a_row_refused_after_valid_ones_leaves_no_image(tmp_path: Path) -> None:
    """Images are cached only once the whole source is valid: the first row's image is not
    left behind by a refusal of the second."""
    for name, changes in (("cvqa", {"Label": [1, -1]}), ("MathVista", {"answer": ["35°", ""]})):
        columns = {**FIXTURES[name].columns, **changes}
        root = build_snapshot(name, tmp_path / "datasets" / name, columns)
        with pytest.raises(InputError, match=f"{name} row .* refused"):
            _load(name, root)
        assert not (tmp_path / "clearsight").exists(), name


def _image_paths(root: Path, name: str, paths: list[str]) -> None:
    """Rewrite the replica's image column as path-only Image values (no bytes)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    file, column = root / FIXTURES[name].file, HUB_SPECS[name].image
    table = pq.read_table(file)
    field = table.schema.field(column)
    values = pa.array([{"bytes": None, "path": p} for p in paths], type=field.type)
    pq.write_table(table.set_column(table.schema.get_field_index(column), field, values), file)


@pytest.mark.parametrize("how", ["dotdot", "symlink", "absolute"])
def test_an_image_path_leaving_the_snapshot_is_refused(tmp_path: Path, how: str) -> None:
    """A path-only image must resolve inside the snapshot: ``..``, an absolute path and a
    symbolic link out are refused by row id (the picture would be read and shown to a model)."""
    secret = tmp_path / "secret.png"
    secret.write_bytes(png(9))
    root = build_snapshot("mmstar", tmp_path / "snap")
    (root / "in.png").write_bytes(png(8))
    (root / "link.png").symlink_to(secret)
    escape = {"dotdot": "../secret.png", "symlink": "link.png", "absolute": str(secret)}[how]
    _image_paths(root, "mmstar", ["in.png", escape])
    with pytest.raises(InputError, match=r"mmstar row 1 refused: its image .* leaves "):
        load_instances(root, "mmstar")
    _image_paths(root, "mmstar", ["in.png", "in.png"])  # inside: read as it is
    assert [Path(i.image) for i in load_instances(root, "mmstar")] == [root / "in.png"] * 2


# ------------------------------------------------------------------ lettered options


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_lettered_options_never_fail_and_keep_letters_in_order(text: str) -> None:
    stem, options = lettered_options(text)
    assert isinstance(stem, str)
    assert options == () or 2 <= len(options) <= len(LETTERS)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text("xyz 0123456789°", min_size=1, max_size=8).map(str.strip).filter(bool),
        min_size=2,
        max_size=10,
    ),
    st.sampled_from(["{k}. {o}", "{k}: {o}", "({k}) {o}", "{k}){o}", "{k}:{o}"]),
    st.sampled_from(["\n", " ", "; ", ", "]),
)
def test_rendered_options_parse_back(options: list[str], form: str, sep: str) -> None:
    text = "Which one?\nChoices: " + sep.join(
        form.format(k=LETTERS[i], o=o) for i, o in enumerate(options)
    )
    stem, got = lettered_options(text)
    assert stem == "Which one?"
    assert got == tuple(options)


# what the drawn columns of a row may hold, by the mapping's forms
_TEXT = st.none() | st.text(max_size=12)
_DRAWN: dict[str, dict[str, Any]] = {
    "cvqa": {
        "Label": st.integers(-3, 12),
        "Translated Options": st.none() | st.lists(st.text(max_size=5), max_size=12),
    },
    "mmstar": {"question": _TEXT, "answer": _TEXT},
    "MathVista": {
        "choices": st.none() | st.lists(st.text(max_size=4), max_size=12),
        "answer": _TEXT,
    },
    "MMMU-Pro": {"options": _TEXT, "answer": _TEXT},
    "LogicVista": {"question": _TEXT, "answer": _TEXT},
    "figureqa": {
        "qa": st.lists(st.fixed_dictionaries({"question": _TEXT, "answer": _TEXT}), max_size=3)
    },
}


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_any_row_of_a_schema_loads_or_is_refused_by_id_leaving_no_image(data: Any) -> None:
    import tempfile

    name = data.draw(st.sampled_from(sorted(_DRAWN)))
    drawn = {col: [data.draw(strategy)] for col, strategy in _DRAWN[name].items()}
    columns = {col: values[:1] for col, values in FIXTURES[name].columns.items()} | drawn
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "clearsight"
        os.environ["CLEARSIGHT_CACHE"] = str(cache)  # the autouse fixture restores it
        root = build_snapshot(name, Path(tmp) / "datasets" / name, columns)
        records: list[Instance] | list[Problem] = []
        error = ""
        try:
            records = _load(name, root)
        except InputError as exc:
            error = str(exc)
        if error:
            assert f"{name} row " in error or "problem " in error
            assert "\n" not in error
            assert not cache.exists()  # a refused row writes no image
        for record in records:
            assert record.gold
            assert Path(str(record.image)).is_file()


def test_a_runs_manifest_records_the_hub_split_it_read(tmp_path: Path) -> None:
    import hashlib

    from clearsight.grounding.problems.hub import benchmark_record
    from clearsight.probe.sources.load import source_manifest

    root = build_snapshot("mmstar", tmp_path / "mmstar")
    data = (root / "mmstar.parquet").read_bytes()
    record = source_manifest(str(root), "mmstar", 2)
    assert record == {
        "source": str(root.resolve()),
        "format": "hub snapshot",
        "hub_id": "Lin-Chen/MMStar",
        "config": "val",
        "split": "val",
        "revision": HUB_SPECS["mmstar"].revision,
        "files": 1,
        "sha256": hashlib.sha256(b"mmstar.parquet" + data).hexdigest(),
        "dataset": "mmstar",
        "count": 2,
    }
    datasets = tmp_path / "datasets"
    build_snapshot("A-OKVQA", datasets / "A-OKVQA")
    entry = benchmark_record("A-OKVQA", datasets)
    assert entry["origin"] == str((datasets / "A-OKVQA").resolve())
    assert (entry["hub_id"], entry["split"], entry["format"]) == (
        "HuggingFaceM4/A-OKVQA",
        "validation",
        "hub snapshot",
    )
    (datasets / "MathVista").mkdir()
    (datasets / "MathVista" / "testmini.jsonl").write_text('{"pid": "1"}\n')
    jsonl = benchmark_record("MathVista", datasets)  # the JSONL layout, as before
    assert jsonl == {
        "origin": str((datasets / "MathVista" / "testmini.jsonl").resolve()),
        "file_sha256": hashlib.sha256(b'{"pid": "1"}\n').hexdigest(),
    }


@pytest.mark.parametrize("question", [None, "", "   "])
def test_a_row_without_a_question_is_refused_by_its_row(tmp_path: Path, question: Any) -> None:
    """Hypothesis found it: figureqa's question None was refused as ``instance figureqa/0/0``
    (the instance's own check), not by the row that holds it."""
    columns = {col: values[:1] for col, values in FIXTURES["figureqa"].columns.items()}
    qa = [[{"question": question, "answer": "Yes"}]]  # figureqa's rows are its qa pairs
    root = build_snapshot("figureqa", tmp_path / "figureqa", columns | {"qa": qa})
    with pytest.raises(InputError, match=r"^figureqa row \S+ refused: its question is empty$"):
        _load("figureqa", root)
