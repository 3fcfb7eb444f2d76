"""Another split or config of a hub dataset (issue 46 item 11): ``NAME[CONFIG]@SPLIT`` read by
one parser (hypothesis-tested, one-line errors), the spec's files renamed where they name the
split or config (MATH-Vision's testmini, MMMU-Pro's 4-option config), refused where they name
neither, and ``clearsight fetch --split/--config`` and the loaders reading the choice."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.datasets.hub import (
    HUB_SPECS,
    DatasetRef,
    find_hub_spec,
    hub_spec,
    parse_dataset_ref,
)
from clearsight.validate import InputError

runner = CliRunner()

_WORD = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", min_size=1)
_NAMES = st.text(
    st.characters(blacklist_characters="[]@", blacklist_categories=("Cc", "Cs", "Zs", "Zl")),
    min_size=1,
)
_CONFIGS = st.text(
    st.characters(blacklist_characters="/[]@", blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
    min_size=1,
).filter(lambda t: t == t.strip() and t.isprintable())
#: The hub's rule for a split name (the parser's, written again here).
_SPLIT_RULE = re.compile(r"\w+(\.\w+)*", re.ASCII)
_SPLITS = st.lists(_WORD, min_size=1, max_size=3).map(".".join)


@given(_NAMES, st.none() | _CONFIGS, st.none() | _SPLITS)
def test_a_reference_reads_back_as_written(
    name: str, config: str | None, split: str | None
) -> None:
    ref = DatasetRef(name, config, split)
    assert parse_dataset_ref(str(ref)) == ref


@given(st.text(min_size=1).filter(lambda t: not _SPLIT_RULE.fullmatch(t)))
def test_a_bad_split_is_one_line_naming_the_rule(split: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_dataset_ref(f"MATH-Vision@{split}")
    message = str(caught.value)
    assert message.startswith("split ") or message.startswith("dataset ")
    assert "\n" not in message.replace(repr(split), "")


@pytest.mark.parametrize(
    "text", ["", "@test", " seedbench", "seedbench[", "seedbench[a]]", "x[a/b]", "x[ a]", "x[]"]
)
def test_malformed_references_are_refused_in_one_line(text: str) -> None:
    with pytest.raises(InputError, match=r"^(dataset|config|split) "):
        parse_dataset_ref(text)


def test_the_papers_other_splits_and_configs_are_found() -> None:
    testmini = hub_spec("MATH-Vision@testmini", "grounding")
    assert (testmini.name, testmini.split) == ("MATH-Vision", "testmini")
    assert testmini.files == ("data/testmini-*.parquet",)
    four = hub_spec("MMMU-Pro[standard (4 options)]")
    assert four.config == "standard (4 options)"
    assert four.files == ("standard (4 options)/test-*.parquet",)
    assert four.columns == HUB_SPECS["MMMU-Pro"].columns  # the same mapping, checked again
    assert hub_spec("seedbench") is HUB_SPECS["seedbench"]
    assert find_hub_spec("nowhere@test") is None
    with pytest.raises(InputError, match="do not name its split 'val'"):
        hub_spec("mmstar@test")


@pytest.mark.parametrize("name", sorted(HUB_SPECS))
def test_every_spec_reads_its_own_choice_and_renames_or_refuses_another(name: str) -> None:
    spec = HUB_SPECS[name]
    assert hub_spec(str(DatasetRef(name, spec.config, spec.split))) == spec
    parts = [p for f in spec.files for p in f.split("/")]
    named = any(
        p == spec.split or p.startswith((f"{spec.split}-", f"{spec.split}.")) for p in parts
    )
    if not named:  # one file for the repository (MMStar's mmstar.parquet): refused, one line
        with pytest.raises(InputError, match=f"do not name its split '{spec.split}'"):
            spec.choose(split="other")
        return
    other = spec.choose(split="other")
    assert other.split == "other"
    assert other.files != spec.files
    assert all("other" in f for f in other.files)


def test_fetch_reads_another_split_into_its_own_folder(tmp_path: Path, monkeypatch: Any) -> None:
    pytest.importorskip("datasets")
    from clearsight.datasets.fetch import fetch_dataset
    from fixtures.hub_snapshots import FIXTURES, build_snapshot

    monkeypatch.setenv("CLEARSIGHT_CACHE", str(tmp_path / "clearsight"))
    served = build_snapshot("MATH-Vision", tmp_path / "served")
    test_file = served / FIXTURES["MATH-Vision"].file
    shutil.move(test_file, test_file.with_name(test_file.name.replace("test-", "testmini-")))
    calls: list[dict[str, Any]] = []

    def download(**kwargs: Any) -> str:
        calls.append(kwargs)
        for pattern in kwargs["allow_patterns"]:
            for path in served.glob(pattern):
                target = Path(kwargs["local_dir"]) / path.relative_to(served)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
        return str(kwargs["local_dir"])

    result = fetch_dataset("MATH-Vision@testmini", download=download)
    assert result.status == "fetched", result.detail
    assert "(split testmini)" in result.detail
    assert calls[0]["allow_patterns"] == ["data/testmini-*.parquet", "README.md"]
    root = tmp_path / "clearsight" / "datasets"
    assert (root / "MATH-Vision@testmini").is_dir()
    listed = runner.invoke(
        app, ["problems", "--datasets", str(root), "--benchmarks", "MATH-Vision@testmini"]
    )
    assert listed.exit_code == 0, listed.output
    with pytest.raises(InputError, match=r"no .*split test|not the schema|no MATH-Vision"):
        fetch_dataset("MATH-Vision", download=download)  # the test split is not served


def test_fetch_options_compose_the_choice_and_refuse_in_one_line() -> None:
    bad = runner.invoke(app, ["fetch", "--dataset", "MATH-Vision", "--split", "test mini"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "error: split 'test mini': a split name is letters, digits and _ (dot-joined words), "
        "e.g. testmini"
    ]
    flat = runner.invoke(app, ["fetch", "--dataset", "mmstar", "--split", "test"])
    assert flat.exit_code == 2
    assert "do not name its split 'val'" in flat.output


def test_a_probe_source_reads_another_split_by_its_reference(
    tmp_path: Path, monkeypatch: Any
) -> None:
    pytest.importorskip("datasets")
    from fixtures.hub_snapshots import FIXTURES, build_snapshot

    monkeypatch.setenv("CLEARSIGHT_CACHE", str(tmp_path / "clearsight"))
    root = build_snapshot("cvqa", tmp_path / "cvqa")
    test_file = root / FIXTURES["cvqa"].file
    shutil.move(test_file, test_file.with_name("validation-00000-of-00001.parquet"))
    args = ["instances", "--instances", str(root), "--dataset", "cvqa@validation"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "instances: 2" in result.output
    plain = runner.invoke(app, ["instances", "--instances", str(root), "--dataset", "cvqa"])
    assert plain.exit_code == 2  # the test split's files are not there
