"""The probe read as the paper does (issue 36): UoT's search among the default strategies,
Table 3 averaged over datasets with rounds counted by query, runs with another sensor or K side
by side (Tables 4 and 6), Table 8's latency, Fig. 6 by dataset, the query-type judge against
people's labels, distillation data balanced across sensors, and a docstring without control
characters. Numbers are checked against values worked out by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.probe.config import ProbeConfig
from clearsight.probe.instances import Instance
from clearsight.probe.protocol import run_probe
from clearsight.probe.transcript import Transcript
from clearsight.store import RunStore
from clearsight.validate import InputError
from fixtures.probe_runs import IDS, probe_config

TOL = 1e-9


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ------------------------------------------------------------------ 7: UoT among the defaults


def test_the_uot_search_is_a_default_strategy_and_the_prompt_variant_is_not_the_papers() -> None:
    from clearsight.probe.strategies import STRATEGIES, prompted, uot

    assert ProbeConfig().strategies == ("direct", "react", "uot", "bp")
    assert STRATEGIES["uot"].searches  # the default UoT is the search
    described = ProbeConfig.model_fields["strategies"].description or ""
    assert (
        "uot_prompt (UoT's idea as a system prompt only, without the search: not the paper's)"
        in (described)
    )
    for module in (uot, prompted):
        text = " ".join((module.__doc__ or "").split())
        assert "paper's prompt-only" not in text
    source = Path(uot.__file__).read_text(encoding="utf-8")
    assert "(the paper's prompt-only variant)" not in source
    assert (
        "#: UoT as a system prompt only, without the search (a lighter variant, not the paper's)."
        in (source)
    )


# ------------------------------------------------------------------ 8: Table 3


def _queries(rows: list[tuple[str, int, str]], **setting: object) -> pd.DataFrame:
    """Queries of reasoner r's one BP trial (run 0, true u, sensor s) unless ``setting``
    says otherwise."""
    base = {"reasoner": "r", "strategy": "bp", "run": 0, "signal": "true", "sensor": "s"}
    return pd.DataFrame(
        [base | setting | {"dataset": d, "round": rnd, "type": t} for d, rnd, t in rows]
    )


def test_table_3_reads_one_bp_trial_per_reasoner_unless_pooled() -> None:
    """Issue 46 item 3: the paper's Table 3 is one BP trial per reasoner (and the people's);
    ReAct and UoT queries, other runs, ablation signals and other sensors are left out."""
    from clearsight.probe.posthoc.querytypes import query_type_table

    one = [("seedbench", 1, "Descriptive")]
    other = [("seedbench", 1, "Targeted")]
    frame = pd.concat(
        [
            _queries(one),
            _queries(other, run=1),
            _queries(other, strategy="react"),
            _queries(other, strategy="uot"),
            _queries(other, signal="none"),
            _queries(other, sensor="t"),
            _queries(one * 3 + other, reasoner="human", strategy="human", run=2),
        ],
        ignore_index=True,
    )
    table = query_type_table(frame).set_index(["reasoner", "phase"])
    assert table.loc[("r", "round 1"), "Descriptive"] == pytest.approx(100.0, abs=TOL)
    assert table.loc[("r", "round 1"), "queries"] == 1
    # the people's one session set: 3 of 4 descriptive
    assert table.loc[("human", "round 1"), "Descriptive"] == pytest.approx(75.0, abs=TOL)
    pooled = query_type_table(frame, pooled=True).set_index(["reasoner", "phase"])
    # pooled: 1 descriptive of r's 6 queries
    assert pooled.loc[("r", "round 1"), "Descriptive"] == pytest.approx(100 / 6, abs=TOL)
    assert pooled.loc[("r", "round 1"), "queries"] == 6


def test_table_3_averages_the_datasets_shares() -> None:
    from clearsight.probe.posthoc.querytypes import query_type_table

    frame = _queries(
        [
            *[("seedbench", 1, "Descriptive")] * 3,
            ("seedbench", 1, "Targeted"),
            ("cvqa", 1, "Descriptive"),
            ("seedbench", 2, "Targeted"),
            ("seedbench", 3, "Confirmatory"),
            *[("cvqa", 2, "Targeted")] * 3,
            ("cvqa", 4, "Contrastive"),
        ]
    )
    table = query_type_table(frame).set_index(["reasoner", "phase"])
    first, later = table.loc[("r", "round 1")], table.loc[("r", "round 2+")]
    # round 1: seedbench 75 / 25, cvqa 100 / 0 -> (75 + 100) / 2, (25 + 0) / 2 (pooled: 80 / 20)
    assert first["Descriptive"] == pytest.approx(87.5, abs=TOL)
    assert first["Targeted"] == pytest.approx(12.5, abs=TOL)
    # rounds 2+: seedbench Targeted 50, Confirmatory 50; cvqa Targeted 75, Contrastive 25
    assert later["Targeted"] == pytest.approx(62.5, abs=TOL)  # pooled: 4 / 6 = 66.7
    assert later["Confirmatory"] == pytest.approx(25.0, abs=TOL)
    assert later["Contrastive"] == pytest.approx(12.5, abs=TOL)
    assert later["Comparative"] == 0.0
    assert (first["datasets"], later["datasets"]) == (2, 2)
    assert (first["queries"], later["queries"]) == (5, 6)


def test_a_first_turn_without_a_query_leaves_the_first_query_in_round_1(tmp_path: Path) -> None:
    """The reasoner's first turn asks nothing (a note, a nudge); its second asks. The paper
    counts rounds by query, so that query is round 1 of Table 3 (its turn, 2, is kept)."""
    from clearsight.driver import Execution
    from clearsight.probe.posthoc.protocol import AnalysisConfig, run_probe_analysis
    from clearsight.probe.results import load_probe_results

    config = probe_config(tmp_path, instance_ids=IDS[:1], strategies=("bp",), runs=1)
    reasoner = _write(
        tmp_path / "thinking.jsonl",
        [
            {"match": "Visual assistant:", "texts": ["Belief: B=0.9\nThe answer is: (B)"]},
            {"texts": ["Let me think about the options first."]},
            {"texts": ['Belief: A=0.5, B=0.5\nMy question is: "What is in the cup?"']},
        ],
    )
    config = config.model_copy(update={"reasoners": (f"scripted:{reasoner}",)})
    run = tmp_path / "run"
    run_probe(config, run, progress=False)
    judge = _write(
        tmp_path / "judge.jsonl",
        [{"match": "Classify", "texts": ['It asks for the scene. {"type": "Descriptive"}']}],
    )
    analyses = AnalysisConfig(judge_model=f"scripted:{judge}", belief=False)
    run_probe_analysis(run, analyses, Execution(progress=False))
    queries = load_probe_results(run).queries
    assert queries["round"].tolist() == [1]  # the turn index would make it 2 (round 2+)
    assert queries[["turn", "type"]].to_dict("records") == [{"turn": 2, "type": "Descriptive"}]


# ------------------------------------------------------------------ 4: Tables 4 and 6 across runs


def test_runs_with_another_k_or_sensor_stand_side_by_side(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app
    from clearsight.probe.analysis import analyse_probe

    five, three, other = tmp_path / "k5", tmp_path / "k3", tmp_path / "other"
    run_probe(probe_config(tmp_path, strategies=("bp",)), five, progress=False)
    run_probe(probe_config(tmp_path, strategies=("bp",), k=3), three, progress=False)
    sensor = tmp_path / "sensor2.jsonl"
    sensor.write_text((tmp_path / "sensor.jsonl").read_text())
    config = probe_config(tmp_path, strategies=("bp",)).model_copy(
        update={"sensor": f"scripted:{sensor}"}
    )
    run_probe(config, other, progress=False)
    alone = {run: analyse_probe(run).datasets.iloc[0] for run in (five, three, other)}

    samples = analyse_probe(five, [three]).samples
    assert samples["k"].tolist() == [3, 5]
    assert list(samples.columns[-3:]) == ["bundled acc", "bundled acc_std", "bundled ece"]
    for k, run in ((3, three), (5, five)):
        row = samples[samples["k"] == k].iloc[0]
        assert row["bundled acc"] == pytest.approx(alone[run]["acc"], abs=TOL)
        assert row["bundled ece"] == pytest.approx(alone[run]["ece"], abs=TOL, nan_ok=True)
    assert analyse_probe(five, [three]).sensors.empty  # one sensor: no Table 4

    sensors = analyse_probe(five, [other]).sensors
    assert sensors["dataset"].tolist() == ["bundled"]
    columns = [c for c in sensors.columns if c != "dataset"]
    assert len(columns) == 2
    assert all(", sensor scripted:" in c for c in columns)
    by_sensor = {c: sensors[c].iloc[0] for c in columns}
    assert by_sensor[next(c for c in columns if "sensor2" in c)] == pytest.approx(
        alone[other]["acc"], abs=TOL
    )

    out = CliRunner().invoke(app, ["report", str(five), str(three), "--verbose"])
    assert out.exit_code == 0, out.output
    assert "Table 6: accuracy (mean ± SD over runs, %) and cross-run ECE by dataset" in out.output
    with pytest.raises(InputError, match="reasoner/strategy/sensor/K/signal"):
        analyse_probe(five, [five])


# ------------------------------------------------------------------ 11: Table 8, Fig. 6


def test_table_8_is_the_mean_stored_seconds_per_conversation(tmp_path: Path) -> None:
    from clearsight.probe.analysis import analyse_probe
    from clearsight.probe.page.report import probe_tables

    run = tmp_path / "run"
    config = probe_config(tmp_path)
    run_probe(config, run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        stored = [(r.spec.get("strategy", "direct"), r.elapsed_s) for r in store.iter_records("ok")]
    analysis = analyse_probe(run)
    table = analysis.latency.set_index("strategy")
    column = f"{config.sensor} (s)"
    for strategy in ("direct", "bp"):
        seconds = [s for name, s in stored if name == strategy]
        assert len(seconds) == 4
        assert table.loc[strategy, column] == pytest.approx(np.mean(seconds), rel=1e-9)
        assert table.loc[strategy, "conversations"] == 4
    titles = list(probe_tables(analysis))
    assert any(t.startswith("Table 8: wall-clock seconds per conversation") for t in titles)


def test_fig_2_has_no_bins_without_the_build_samples_that_define_c() -> None:
    """Issue 46 item 6: c is how many of 11 stage-1 samples named the gold option; five direct
    runs rescaled (c11 = round(11 c / 5)) gave bins 0 and 11 the filtered pool (1 <= c <= 5)
    cannot have. Without build samples there is no Fig. 2."""
    from clearsight.probe.numbers.accuracy import consistency_bins

    frame = pd.DataFrame(
        [
            {"reasoner": "vlm", "strategy": "direct", "sensor": "v", "k": 1, "signal": "none",
             "dataset": "seedbench", "instance_id": i, "correct": ok, "run": r}
            for i, ok in (("s1", True), ("s2", False))
            for r in range(5)
        ]
    )  # fmt: skip
    assert consistency_bins(frame, None).empty
    build = pd.DataFrame({"sensor": ["v", "v"], "instance_id": ["s1", "s2"], "c11": [5, 1]})
    table = consistency_bins(frame, build)
    assert dict(zip(table["c11"], table["accuracy"], strict=True)) == {1: 0.0, 5: 100.0}


def test_fig_6_splits_fig_2_by_dataset(tmp_path: Path) -> None:
    from clearsight.probe.numbers.accuracy import consistency_bins

    rows = [
        # dataset, instance, strategy, correct
        ("seedbench", "s1", "direct", True),
        ("seedbench", "s1", "bp", True),
        ("seedbench", "s2", "bp", False),
        ("cvqa", "c1", "bp", True),
        ("cvqa", "c1", "bp", True),
    ]
    frame = pd.DataFrame(
        [
            {"reasoner": "r", "strategy": s, "sensor": "v", "k": 5, "signal": "true",
             "dataset": d, "instance_id": i, "correct": ok}
            for d, i, s, ok in rows
        ]
    )  # fmt: skip
    consistency = pd.DataFrame(
        {"sensor": ["v"] * 3, "instance_id": ["s1", "s2", "c1"], "c11": [4, 4, 9]}
    )
    table = consistency_bins(frame, consistency, by=("dataset",))
    got = {
        (r.dataset, r.strategy, r.c11): (r.accuracy, r.conversations)
        for r in table.itertuples(index=False)
    }
    assert got == {
        ("cvqa", "bp", 9): (100.0, 2),
        ("seedbench", "bp", 4): (50.0, 2),
        ("seedbench", "direct", 4): (100.0, 1),
    }
    from clearsight.probe.page.figures import consistency_datasets_figure
    from clearsight.probe.page.report import FIG6, probe_tables

    assert consistency_datasets_figure(table) is not None
    # a run without stage-1 build samples has no c of 11: no Fig. 6 (issue 46 item 6)
    run = tmp_path / "run"
    run_probe(probe_config(tmp_path), run, progress=False)
    from clearsight.probe.analysis import analyse_probe

    assert probe_tables(analyse_probe(run))[FIG6].empty


# ------------------------------------------------------------------ 11: query-type judge vs people


QUERY_LABELS = [
    {"question": "Which drink?", "query": "Describe the image.", "labels": ["Descriptive"]},
    {"question": "Which drink?", "query": "Is the cup red or orange?", "round": 2,
     "previous": ["Describe the image."], "labels": ["targeted", "Confirmatory"],
     "consensus": "Targeted"},
    {"question": "Which drink?", "query": "What is in the cup?", "round": 3,
     "labels": ["Targeted", "Targeted", "Contrastive"]},
    {"question": "Which drink?", "query": "So the answer is (B)?", "round": 4,
     "labels": ["Confirmatory", "Comparative"], "consensus": "Confirmatory"},
]  # fmt: skip


def test_the_query_type_judge_against_people_by_hand(tmp_path: Path) -> None:
    from clearsight.probe.posthoc.qtypecheck import query_type_agreement, read_query_labels

    labels = read_query_labels(_write(tmp_path / "labels.jsonl", QUERY_LABELS))
    assert [x.consensus for x in labels] == ["Descriptive", "Targeted", "Targeted", "Confirmatory"]
    assert labels[1].labels == ("Targeted", "Confirmatory")
    assert (labels[0].round, labels[1].previous) == (1, ("Describe the image.",))
    result = query_type_agreement(["Descriptive", "Confirmatory", "Targeted", "Targeted"], labels)
    # consensus: D=D, C!=T, T=T, T!=C -> 2 / 4; union: D, C in (T, C), T, T not in (C, Co) -> 3 / 4
    assert (result.n, result.consensus, result.union, result.unparsed) == (4, 0.5, 0.75, 0)
    # kappa: p_o = 0.5; judge marginals D .25, T .5, C .25; people's D .25, T .5, C .25
    # p_e = .0625 + .25 + .0625 = .375; kappa = (.5 - .375) / (1 - .375) = 0.2
    assert result.kappa == pytest.approx(0.2, abs=TOL)
    from sklearn.metrics import cohen_kappa_score

    unparsed = query_type_agreement(["Descriptive", None, "Targeted", "Confirmatory"], labels)
    assert unparsed.unparsed == 1
    assert unparsed.kappa == pytest.approx(
        cohen_kappa_score(["D", "none", "T", "C"], ["D", "T", "T", "C"]), abs=TOL
    )


def _write_tmp(rows: list[dict[str, object]]) -> Path:
    """``rows`` as a JSONL file of its own (for a property test, where ``tmp_path`` is shared
    by every example)."""
    import os
    import tempfile

    descriptor, name = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(descriptor, "w") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in rows))
    return Path(name)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Q", "query": "q?", "labels": ["Vague"]}, "not a query type"),
        ({"question": "Q", "query": "q?", "labels": []}, "at least one"),
        ({"question": "Q", "query": "", "labels": ["Targeted"]}, "non-empty 'query'"),
        ({"question": "Q", "query": "q?", "labels": ["Targeted"], "round": 0}, "'round'"),
        ({"question": "Q", "query": "q?", "labels": ["Targeted", "Descriptive"]}, "tie"),
        ({"question": "Q", "query": "q?", "labels": "Targeted"}, "list of strings"),
        ({"question": "Q", "query": "q?", "labels": ["Targeted"], "previous": "x"}, "list"),
    ],
)
def test_bad_query_labels_are_input_errors(
    tmp_path: Path, row: dict[str, object], message: str
) -> None:
    from clearsight.probe.posthoc.qtypecheck import read_query_labels

    path = _write(tmp_path / "bad.jsonl", [QUERY_LABELS[0], row])
    with pytest.raises(InputError, match=message) as info:
        read_query_labels(path)
    assert "bad.jsonl:2" in str(info.value)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_types = st.sampled_from(["Descriptive", "targeted", "CONTRASTIVE", "Confirmatory", "Comparative"])


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        _json,
        st.fixed_dictionaries(
            {"question": st.text(max_size=8), "query": st.text(max_size=8)},
            optional={
                "labels": st.lists(_types | st.text(max_size=5), max_size=3),
                "round": st.integers(-2, 5) | st.booleans(),
                "previous": st.lists(st.text(max_size=5), max_size=2) | _json,
                "consensus": _types | st.text(max_size=5),
            },
        ),
    )
)
def test_any_query_label_line_reads_or_is_an_input_error(value: object) -> None:
    from clearsight.probe.posthoc.qtypecheck import read_query_labels
    from clearsight.probe.posthoc.querytypes import QUERY_TYPES

    path = _write_tmp([value])  # type: ignore[list-item]
    try:
        (label,) = read_query_labels(path)
    except InputError:
        return
    finally:
        path.unlink()
    assert label.consensus in QUERY_TYPES
    assert label.labels
    assert set(label.labels) <= set(QUERY_TYPES)
    assert label.round >= 1


def test_the_query_types_command_stores_the_validation(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app
    from clearsight.probe.analysis import analyse_probe
    from clearsight.probe.page.report import probe_tables
    from clearsight.probe.results import load_probe_results

    run = tmp_path / "run"
    run_probe(probe_config(tmp_path, strategies=("direct",)), run, progress=False)
    labels = _write(tmp_path / "labels.jsonl", QUERY_LABELS)
    judge = _write(
        tmp_path / "judge.jsonl",
        [
            {"match": "Round 1 question: Describe", "texts": ['{"type": "Descriptive"}']},
            {"match": "red or orange", "texts": ['{"type": "Confirmatory", "confidence": 0.7}']},
            {"match": "in the cup", "texts": ["Targeted, I think."]},
            {"match": "answer is (B)", "texts": ['{"type": "Targeted"}']},
        ],
    )
    args = ["probe", "query-types", str(run), "--human-labels", str(labels)]
    out = CliRunner().invoke(app, [*args, "--judge", f"scripted:{judge}"])
    assert out.exit_code == 0, out.output
    assert "consensus: 0.500" in out.output
    assert "union: 0.750" in out.output
    assert "kappa: 0.200" in out.output
    table = next(v for k, v in probe_tables(analyse_probe(run)).items() if "query-type judge" in k)
    row = table.iloc[0]
    assert (row["n"], row["consensus"], row["union"]) == (4, 50.0, 75.0)
    assert row["kappa"] == pytest.approx(0.2, abs=TOL)
    again = CliRunner().invoke(app, [*args, "--judge", f"scripted:{judge}"])
    assert again.exit_code == 0
    assert len(load_probe_results(run).query_type_validations) == 1  # the same item
    bad = CliRunner().invoke(
        app, ["probe", "query-types", str(tmp_path), "--human-labels", str(labels)]
    )
    assert bad.exit_code == 2
    assert "not a probe run directory" in bad.output


# ------------------------------------------------------------------ 11: distillation balance


def _trajectory(sensor: str, n: int) -> tuple[str, Transcript]:
    inst = Instance(f"i{n}", "", "Q?", ("a", "b"), "A", "seedbench", "x")
    t = Transcript.start(inst, reasoner="hf:m", strategy="bp", sensor=sensor)
    return f"{sensor}-{n}", t.finish("A", "committed")


def test_distillation_takes_as_many_trajectories_from_each_sensor() -> None:
    from clearsight.probe.distill.sft import balance_sensors
    from clearsight.probe.distill.train import DistillConfig

    assert DistillConfig().balance is True
    chosen = [
        _trajectory("intern", 0),
        _trajectory("qwen", 1),
        _trajectory("intern", 2),
        _trajectory("intern", 3),
        _trajectory("qwen", 4),
    ]
    # intern 3, qwen 2 -> 2 each, the first of each in store order
    assert [k for k, _ in balance_sensors(chosen)] == ["intern-0", "qwen-1", "intern-2", "qwen-4"]
    assert [k for k, _ in balance_sensors(chosen, limit=3)] == ["intern-0", "qwen-1"]
    assert [k for k, _ in balance_sensors(chosen[:1])] == ["intern-0"]
    with pytest.raises(InputError, match="leaves no trajectory"):
        balance_sensors(chosen, limit=1)


# ------------------------------------------------------------------ 11: a clean docstring


def test_domain_table_docstring_holds_no_control_characters() -> None:
    from clearsight.probe.numbers import accuracy

    doc = accuracy.domain_table.__doc__ or ""
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", doc)
    assert r"\bar a_r = \frac{1}{|D_r|}" in doc
    source = Path(accuracy.__file__).read_text(encoding="utf-8")
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", source)


def test_fig_5_reports_the_queries_per_conversation_distribution() -> None:
    """Issue 46 item 5 (its reporting part): beside Fig. 5's mean, the median, the 90th
    percentile, the most and the count of the queries per conversation, by hand."""
    from clearsight.probe.numbers.accuracy import queries_table

    frame = pd.DataFrame(
        [
            {"reasoner": "r", "strategy": "uot", "sensor": "v", "k": 5, "signal": "true",
             "dataset": "seedbench", "queries": q}
            for q in (1, 2, 2, 3, 12)
        ]
    )  # fmt: skip
    (row,) = queries_table(frame).itertuples(index=False)
    # mean 20 / 5 = 4; median 2; p90 linear between 3 (0.75) and 12 (1.0): 3 + 0.6 x 9 = 8.4
    assert (row.queries, row.median, row.max, row.conversations) == (4.0, 2.0, 12, 5)
    assert row.p90 == pytest.approx(8.4, abs=TOL)
