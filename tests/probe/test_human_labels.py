"""Judges validated against people's labels of u (the paper's Table 5): the agreement
statistics against scikit-learn and SciPy, the labelling format, the command and the report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.probe.judges import ExactJudge
from clearsight.probe.posthoc.agreement import (
    agreement,
    cohen_kappa,
    human_agreement,
    pearson,
    read_human_labels,
)
from clearsight.validate import InputError

TOL = 1e-9

#: Two series of u on 1..5 (at least two items).
series = st.integers(2, 30).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 5), min_size=n, max_size=n),
        st.lists(st.integers(1, 5), min_size=n, max_size=n),
    )
)


@pytest.mark.filterwarnings("ignore:.*only one label in common")
@settings(max_examples=80, deadline=None)
@given(series, st.sampled_from([None, "quadratic"]))
def test_cohen_kappa_matches_scikit_learn(
    pair: tuple[list[int], list[int]], weights: str | None
) -> None:
    from sklearn.metrics import cohen_kappa_score

    a, b = pair
    labels = [1, 2, 3, 4, 5]
    ours = cohen_kappa(a, b, labels, weights=weights)  # type: ignore[arg-type]
    theirs = float(cohen_kappa_score(a, b, labels=labels, weights=weights))
    if math.isnan(theirs):  # no disagreement expected by chance: one shared constant label
        assert a == b
        assert ours == 1.0
    else:
        assert ours == pytest.approx(theirs, abs=TOL)


@settings(max_examples=80, deadline=None)
@given(series)
def test_pearson_matches_scipy(pair: tuple[list[int], list[int]]) -> None:
    from scipy.stats import pearsonr

    a, b = pair
    if len(set(a)) == 1 or len(set(b)) == 1:
        assert math.isnan(pearson(a, b))
    else:
        assert pearson(a, b) == pytest.approx(float(pearsonr(a, b)[0]), abs=TOL)


def test_agreement_by_hand() -> None:
    # a = 1 2 3 3, b = 1 3 3 1: O has (1,1) (2,3) (3,3) (3,1) each 1/4
    result = agreement([1, 2, 3, 3], [1, 3, 3, 1], k=3)
    assert (result.n, result.exact, result.within1) == (4, 0.5, 0.75)
    assert result.mae == pytest.approx(0.75, abs=TOL)
    # rows (a): 1/4, 1/4, 1/2; columns (b): 1/2, 0, 1/2; plain kappa = (p_o - p_e) / (1 - p_e)
    p_o, p_e = 0.5, 0.25 * 0.5 + 0.5 * 0.5
    assert result.kappa == pytest.approx((p_o - p_e) / (1 - p_e), abs=TOL)
    # quadratic: observed disagreement (0 + 1 + 0 + 4) / 4; chance sum_ij r_i c_j (i - j)^2
    rows, cols = (0.25, 0.25, 0.5), (0.5, 0.0, 0.5)
    chance = sum(rows[i] * cols[j] * (i - j) ** 2 for i in range(3) for j in range(3))
    assert result.kappa_quadratic == pytest.approx(1 - 1.25 / chance, abs=TOL)
    assert agreement([2, 2], [2, 2], k=3).kappa == 1.0  # both constant and equal
    assert math.isnan(agreement([2, 2], [2, 3], k=3).pearson)
    with pytest.raises(InputError, match=r"1\.\.3"):
        agreement([1, 4], [1, 1], k=3)
    with pytest.raises(InputError, match="equally long"):
        agreement([1, 2], [1], k=3)
    with pytest.raises(InputError, match="not among the categories"):
        cohen_kappa([1, 9], [1, 1], [1, 2, 3])


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


LABELS = [
    # exact judge: u = 3 (three "red"); the person agrees
    {"query": "colour?", "reply": "red", "samples": ["red", "Red.", "red", "blue"], "u": 3},
    # exact judge: u = 1; the person counts "crimson" as the same: u = 2
    {"query": "colour?", "reply": "red", "samples": ["red", "crimson", "blue", "green"],
     "same": [True, True, False, False]},
    # exact judge: u = 2 (two "a dog"); the person says all four: u = 4
    {"query": "animal?", "reply": "a dog", "samples": ["a dog", "a puppy", "A dog", "dog"], "u": 4},
]  # fmt: skip


def test_labels_read_and_judged_against_people(tmp_path: Path) -> None:
    labels = read_human_labels(_write(tmp_path / "labels.jsonl", LABELS))
    assert [x.u for x in labels] == [3, 2, 4]
    assert [x.line for x in labels] == [1, 2, 3]
    assert labels[0].k == 4
    ((name, (result, seconds)),) = human_agreement(labels, [ExactJudge()]).items()
    assert name == "exact"
    assert seconds >= 0
    expected = agreement([3, 1, 2], [3, 2, 4], k=4)
    assert result == expected
    assert (result.exact, result.within1) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert result.mae == pytest.approx(1.0, abs=TOL)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"reply": "a", "samples": ["a", "b"], "u": 3}, r"u must be an integer in 1..2"),
        ({"reply": "a", "samples": ["a", "b"], "u": 0}, r"u must be an integer in 1..2"),
        ({"reply": "c", "samples": ["a", "b"], "u": 1}, "one of the samples"),
        ({"reply": "a", "samples": ["a"], "u": 1}, "at least two"),
        ({"reply": "a", "samples": ["a", "b"]}, "one of them"),
        ({"reply": "a", "samples": ["a", "b"], "u": 1, "same": [True, False]}, "one of them"),
        ({"reply": "a", "samples": ["a", "b"], "same": [True]}, "one true/false per sample"),
        ({"reply": "a", "samples": ["a", "b"], "same": [False, True]}, "reply itself"),
        ({"reply": "a", "samples": ["a", "b"], "u": True}, "u must be an integer"),
    ],
)
def test_bad_labels_are_input_errors(tmp_path: Path, row: dict[str, object], message: str) -> None:
    path = _write(tmp_path / "bad.jsonl", [LABELS[0], row])
    with pytest.raises(InputError, match=message) as info:
        read_human_labels(path)
    assert "bad.jsonl:2" in str(info.value)


def test_judges_command_stores_table_5(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app
    from clearsight.probe.analysis import analyse_probe
    from clearsight.probe.instances import Instance
    from clearsight.probe.records import store_transcript
    from clearsight.probe.results import load_probe_results
    from clearsight.probe.transcript import Transcript
    from clearsight.report.probe import probe_tables
    from clearsight.store import RunStore

    run = tmp_path / "run"
    inst = Instance("t/1", "", "Colour?", ("red", "blue"), "A", "test", "colour")
    t = Transcript.start(inst, reasoner="m", strategy="bp", sensor="s").finish("A", "committed")
    with RunStore.open(run) as store:
        store_transcript(store, t)
    labels = _write(tmp_path / "labels.jsonl", LABELS)
    runner = CliRunner()
    args = ["probe", "judges", str(run), "--human-labels", str(labels), "--a", "exact"]
    out = runner.invoke(app, [*args, "--b", "exact"])
    assert out.exit_code == 0, out.output
    assert "judge: exact vs people" in out.output
    assert "exact: 0.333" in out.output
    assert "within1: 0.667" in out.output
    table = next(v for k, v in probe_tables(analyse_probe(run)).items() if "Table 5" in k)
    assert table["judge"].tolist() == ["exact"]
    assert table["exact"].iloc[0] == pytest.approx(100 / 3)
    assert table["n"].iloc[0] == 3
    again = runner.invoke(app, [*args, "--b", "exact"])  # the same labels: the same item
    assert again.exit_code == 0
    assert len(load_probe_results(run).validations) == 1
    bad = runner.invoke(
        app, ["probe", "judges", str(tmp_path / "none"), "--human-labels", str(labels)]
    )
    assert bad.exit_code == 2
    assert "not a probe run directory" in bad.output
