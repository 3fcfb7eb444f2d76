"""The probe protocol end to end on scripted models: plan, run, resume, store, analyse, report."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clearsight.metrics import cross_run_ece, cross_run_prediction
from clearsight.models.base import Capabilities, Request, Response
from clearsight.probe.instances import Instance
from clearsight.probe.judges import make_judge, normalise
from clearsight.probe.numbers.accuracy import summary_table
from clearsight.probe.plan import plan_probe
from clearsight.probe.posthoc.agreement import agreement
from clearsight.probe.posthoc.belief import belief_probe, belief_summary, parse_distribution
from clearsight.probe.posthoc.querytypes import classify_queries
from clearsight.probe.protocol import run_probe
from clearsight.probe.records import load_transcripts, store_transcript
from clearsight.probe.results import load_probe_results, transcripts_frame
from clearsight.probe.transcript import Transcript, Turn
from clearsight.store import RunStore
from clearsight.validate import InputError
from fixtures.probe_runs import IDS, analysis_judge, probe_config, scripts


def test_plan_has_one_item_per_conversation(tmp_path: Path) -> None:
    specs = plan_probe(probe_config(tmp_path, signals=("true", "none")))
    # 2 instances x 2 runs x (direct + bp x 2 signals)
    assert len(specs) == 2 * 2 * 3
    assert len({s.key for s in specs}) == len(specs)
    assert {s.strategy for s in specs} == {"direct", "bp"}


def test_run_stores_transcripts_and_resumes(tmp_path: Path) -> None:
    cfg = probe_config(tmp_path)
    summary = run_probe(cfg, tmp_path / "run", progress=False)
    assert (summary.ok, summary.failed) == (8, 0)
    again = run_probe(cfg, tmp_path / "run", progress=False)
    assert again.units == 0  # nothing left to do
    transcripts = load_transcripts(tmp_path / "run")
    bp = [t for t in transcripts if t.strategy == "bp"]
    assert len(bp) == 4
    for t in bp:
        assert t.stop == "committed"
        assert t.committed == "B"
        assert t.rounds == 2
        assert t.vlm_calls == 5
        reply = t.turns[0].reply
        assert reply is not None
        assert reply.u == sum(normalise(s) == normalise(reply.reply) for s in reply.samples)
    direct = [t for t in transcripts if t.strategy == "direct"]
    assert {t.committed for t in direct} == {"B"}
    assert all(t.vlm_calls == 1 for t in direct)


def test_stored_u_is_recomputed_from_the_stored_samples(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    cfg = probe_config(tmp_path, judge="embedding", strategies=("bp",), runs=3)
    run_probe(cfg, tmp_path / "run", progress=False)
    replies = [
        turn.reply
        for t in load_transcripts(tmp_path / "run")
        for turn in t.turns
        if turn.reply is not None
    ]
    assert len(replies) == 6
    from clearsight.probe.judges import consistency

    for reply in replies:
        judge = make_judge(reply.judge)  # e.g. embedding@0.7573
        u, same = consistency(judge, reply.reply, reply.samples, reply.query)
        assert u == reply.u
        assert same == reply.same
        assert 1 <= u <= reply.k


def _t(inst: str, gold: str, run: int, commit: str | None) -> Transcript:
    i = Instance(inst, "x.png", "Q?", ("a", "b", "c"), gold, "seedbench", "scene")
    t = Transcript.start(i, reasoner="r", strategy="bp", sensor="s", run=run, k=5)
    if commit is None:
        return t.finish(None, "budget")
    return t.with_turn(Turn(1, f"The answer is: ({commit})", commit=commit))


def test_cross_run_ece_is_recomputable_from_stored_commits(tmp_path: Path) -> None:
    commits: dict[str, tuple[str, list[str | None]]] = {
        "i1": ("A", ["A", "A", "B"]),
        "i2": ("B", ["C", "C", "C"]),
        "i3": ("A", [None, "B", "A"]),
    }
    with RunStore.open(tmp_path / "run") as store:
        store.begin_run({"config": {}})
        for inst, (gold, runs) in commits.items():
            for run, c in enumerate(runs):
                store_transcript(store, _t(inst, gold, run, c))
    frame = transcripts_frame(load_transcripts(tmp_path / "run"))
    (row,) = summary_table(frame, by=("domain",)).to_dict("records")
    # i1: A with 2/3, correct; i2: C with 3/3, wrong; i3: tie A/B -> B (earlier), 1/3, wrong
    expected_ece = (abs(1 - 2 / 3) + abs(0 - 1) + abs(0 - 1 / 3)) / 3
    assert row["ece"] == pytest.approx(expected_ece)
    # gated by that confidence: 1 (wrong), 2/3 (right), 1/3 (wrong); the best order of one
    # right and two wrong: right first
    assert row["aurc"] == pytest.approx((1 / 1 + 1 / 2 + 2 / 3) / 3)
    assert row["e_aurc"] == pytest.approx((1 / 1 + 1 / 2 + 2 / 3) / 3 - (1 / 2 + 2 / 3) / 3)
    assert row["cross_acc"] == pytest.approx(100 / 3)
    assert row["acc"] == pytest.approx(100 / 3)
    assert row["acc_std"] == pytest.approx(0.0)
    assert cross_run_prediction(["B", "A", "A", "B"]) == ("B", 0.5)
    assert cross_run_prediction([None, None]) == (None, 0.0)
    # the same from the pure function, on the commits alone
    runs = [r for _, r in commits.values()]
    assert cross_run_ece(runs, [g for g, _ in commits.values()]) == pytest.approx(expected_ece)


def test_cross_run_ece_hand_computed() -> None:
    # i1: A, A, B -> A at 2/3 (bin (0.6, 0.7]), right; i2: never committed -> 0 (first bin),
    # wrong; i3: B, A -> tie to the earlier B at 1/2 (bin (0.4, 0.5]), wrong; i4: C x3 at 1
    commits = [["A", "A", "B"], [None, None, None], ["B", "A"], ["C", "C", "C"]]
    gold = ["A", "A", "A", "C"]
    assert cross_run_ece(commits, gold) == pytest.approx(
        (abs(1 - 2 / 3) + abs(0 - 0) + abs(0 - 1 / 2) + abs(1 - 1)) / 4
    )
    # a run that never commits still counts in R: A once of three runs is 1/3, not 1
    assert cross_run_ece([["A", None, None]], ["A"]) == pytest.approx(1 - 1 / 3)
    # one bin: every confidence pools, |sum correct - sum conf| / N
    assert cross_run_ece(commits, gold, n_bins=1) == pytest.approx(
        abs(2 - (2 / 3 + 0 + 1 / 2 + 1)) / 4
    )
    with pytest.raises(InputError, match="gold"):
        cross_run_ece(commits, gold[:2])
    with pytest.raises(InputError, match="at least one"):
        cross_run_ece([], [])


def test_table_1_macro_averages_the_datasets_of_a_domain() -> None:
    from clearsight.probe.numbers.accuracy import domain_table

    rows = []
    # knowledge: mmstar has 4 instances (all right), cvqa 1 (wrong); two runs
    for run in (0, 1):
        for i in range(4):
            rows.append(("mmstar", f"m{i}", run, True))
        rows.append(("cvqa", "c0", run, run == 1))
    frame = pd.DataFrame(
        [
            {
                "reasoner": "r",
                "strategy": "bp",
                "sensor": "s",
                "k": 5,
                "signal": "true",
                "dataset": d,
                "domain": "knowledge",
                "category": "x",
                "instance_id": i,
                "run": run,
                "gold": "A",
                "committed": "A" if ok else "B",
                "correct": ok,
            }
            for d, i, run, ok in rows
        ]
    )
    (row,) = domain_table(frame).to_dict("records")
    # run 0: (100 + 0) / 2 = 50; run 1: (100 + 100) / 2 = 100 (pooled would be 80 and 100)
    assert row["acc"] == pytest.approx(75.0)
    assert row["acc_std"] == pytest.approx(np.std([50.0, 100.0], ddof=1))
    assert (row["datasets"], row["instances"], row["runs"]) == (2, 5, 2)
    # mmstar: A at 2/2, right -> 0; cvqa: tie B/A -> B (run 0) at 1/2, wrong -> 0.5
    assert row["ece"] == pytest.approx((0.0 + 0.5) / 2)


class _Scorer:
    """Candidate scores: letter B gets most mass; the query type 'Targeted' wins."""

    name = "fake-scorer"
    capabilities = Capabilities(generate=True, candidate_probs=True)

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            probs = {c: (0.6 if c in ("B", "Targeted") else 0.1) for c in r.candidates}
            out.append(Response(candidate_probs=probs))
        return out


def test_belief_probe_and_query_types() -> None:
    i = Instance("q", "x.png", "Q?", ("a", "b"), "B", "seedbench", "scene")
    from clearsight.probe.sensor import SensorReply

    reply = SensorReply("What?", ("b", "b"), 0, "b", 2, 2)
    t = Transcript.start(i, reasoner="r", strategy="bp", sensor="s", k=2)
    t = t.with_turn(Turn(1, 'My question is: "What?"', query="What?", reply=reply, shown_u=2))
    t = t.with_turn(Turn(2, "The answer is: (B)", commit="B"))
    trace = belief_probe(t, _Scorer(), readout="letters")
    assert trace.beliefs[0] == {"A": 0.5, "B": 0.5}
    assert trace.beliefs[1]["B"] == pytest.approx(0.6 / 0.7)
    assert trace.methods == ("uniform", "letter-probs")
    summary = belief_summary(t, trace)
    assert summary["steps_to_threshold"] == 1
    assert summary["p_chosen"] == pytest.approx(0.6 / 0.7)
    types = classify_queries(t, _Scorer(), "scores")
    assert [q["type"] for q in types] == ["Targeted"]
    with pytest.raises(InputError, match="read-out"):
        classify_queries(t, _Scorer(), "vibes")  # type: ignore[arg-type]
    assert parse_distribution("A=0.2, B: 60%", ("A", "B")) == pytest.approx({"A": 0.25, "B": 0.75})


def test_judge_agreement_against_hand_values() -> None:
    result = agreement([1, 2, 3, 5], [1, 3, 3, 2], k=5)
    assert result.exact == 0.5
    assert result.within1 == 0.75
    assert result.mae == 1.0
    assert result.pearson == pytest.approx(float(np.corrcoef([1, 2, 3, 5], [1, 3, 3, 2])[0, 1]))
    from sklearn.metrics import cohen_kappa_score

    kappa = cohen_kappa_score(
        [1, 2, 3, 5], [1, 3, 3, 2], labels=[1, 2, 3, 4, 5], weights="quadratic"
    )
    assert result.kappa_quadratic == pytest.approx(kappa)
    with pytest.raises(InputError):
        agreement([0, 1], [1, 1], k=5)


def test_results_and_report(tmp_path: Path) -> None:
    from clearsight.pages.html import cell_text
    from clearsight.probe.analysis import analyse_probe
    from clearsight.probe.page.report import MAIN_TABLE, build_probe_report, probe_tables

    run = tmp_path / "run"
    run_probe(probe_config(tmp_path), run, progress=False)
    results = load_probe_results(run)
    assert isinstance(results.transcripts, pd.DataFrame)
    assert len(results.transcripts) == 8
    assert [t.strategy for t in results.conversations].count("bp") == 4
    paths = build_probe_report(run)
    assert (paths.html, paths.summary_md, paths.summary_csv) == (
        run / "report.html",
        run / "summary.md",
        run / "summary.csv",
    )
    html = paths.html.read_text()
    assert "Table 1" in html
    assert "Table 9" in html
    md = paths.summary_md.read_text()
    assert "| bp |" in md or "bp" in md
    # summary.csv is Table 1, the table the page renders first
    analysis = analyse_probe(run)
    table1 = probe_tables(analysis)[MAIN_TABLE]
    csv = pd.read_csv(paths.summary_csv, keep_default_na=False, na_values=[""])
    assert list(csv.columns) == list(table1.columns)
    assert sorted(csv["strategy"]) == ["bp", "direct"]
    assert csv["runs"].tolist() == [2, 2]
    pd.testing.assert_frame_equal(csv, table1, check_dtype=False)
    section = html.split("<h2>Table 1", 1)[1].split("</table>", 1)[0]
    cells = [unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", section)]
    assert cells == [cell_text(v) for row in table1.itertuples(index=False) for v in row]
    # the headline leads page and summary: Table 1's accuracy ± SD and ECE, a sentence per reasoner
    assert html.index("<section id='headline'>") < html.index("<h2>Table 1")
    assert next(ln for ln in md.splitlines() if ln.startswith("## ")) == "## Headline"
    head = html.split("<section id='headline'>", 1)[1].split("</section>", 1)[0]
    for acc, sd, ece in zip(table1["acc"], table1["acc_std"], table1["ece"], strict=True):
        assert f"{acc:.1f} ± {sd:.1f}" in head
        assert f"cross-run ECE {ece:.3f}" in head
    for sensor, k in zip(table1["sensor"], table1["k"], strict=True):  # K tells settings apart
        assert f"with the sensor {sensor} (K = {k}," in unescape(head)
    assert "<th>K</th>" in head
    assert head.count("<li>") == table1["reasoner"].nunique()
    # two runs per instance: the cross-run confidence gates predictions, drawn and scored
    by_dataset = next(t for title, t in probe_tables(analysis).items() if "Table 11" in title)
    assert {"aurc", "e_aurc"} <= set(by_dataset.columns)
    assert ((by_dataset.aurc >= by_dataset.e_aurc - 1e-12) & (by_dataset.e_aurc >= -1e-12)).all()
    assert "Selective prediction (cross-run confidence)" in html
    from clearsight.probe.page.report import FIG4, FIG5, probe_figures

    figures = probe_figures(analysis, probe_tables(analysis))
    # Fig. 3 (a signal setting), Fig. 5 (queries); no Fig. 2: the run has no build samples,
    # and its direct answers do not define c of 11 (issue 46 item 6)
    assert [title for title in figures if title.startswith(("Fig. 2", "Fig. 3"))] == [
        next(t for t in figures if t.startswith("Fig. 3"))
    ]
    assert analysis.consistency.empty
    assert FIG5 in figures
    assert FIG4 not in figures  # no belief probe was run
    assert html.count("src='data:image/png;base64,") == len(figures) + 1  # + risk-coverage


def _build_config(tmp_path: Path, **kw: object) -> Any:
    from clearsight.probe.bench.protocol import BuildConfig

    a = Instance("bundled/a", "bundled:skimage-coffee", "Q1?", ("x", "y"), "A", "bundled", "c")
    b = Instance("bundled/b", "bundled:skimage-coffee", "Q2?", ("x", "y"), "A", "bundled", "c")
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(i.to_json()) + "\n" for i in (a, b)))
    sensor = tmp_path / "build-sensor.jsonl"
    lines = [
        {"match": "Q1?", "texts": ["A"] * 3 + ["B"] * 8},  # c = 3: kept
        {"match": "Q2?", "texts": ["A"] * 11},  # c = 11: the sensor is reliable, dropped
    ]
    sensor.write_text("".join(json.dumps(x) + "\n" for x in lines))
    fields: dict[str, Any] = {"instances": str(instances), "dataset": "jsonl"}
    fields.update({"sensor": f"scripted:{sensor}", "samples": 11, **kw})
    return BuildConfig(**fields), (a, b)


def test_build_stage1_keeps_unreliable_questions(tmp_path: Path) -> None:
    from clearsight.driver import Execution
    from clearsight.probe.bench.protocol import build_stage1, build_stage2

    config, (a, b) = _build_config(tmp_path)
    summary, results = build_stage1(config, tmp_path / "b", Execution(progress=False))
    assert (summary.ok, summary.failed, summary.exit_code) == (2, 0, 0)
    assert [r.c for r in results] == [3, 11]
    assert [r.kept for r in results] == [True, False]
    build = load_probe_results(tmp_path / "b").build
    assert sorted(build["c"]) == [3, 11]
    assert set(build["n"]) == {11}
    again, same = build_stage1(config, tmp_path / "b", Execution(progress=False))
    assert again.units == 0  # nothing asked twice
    assert same == results
    t = Transcript.start(a, reasoner="human:ann", strategy="human", sensor="s")
    with RunStore.open(tmp_path / "h") as store:
        store.begin_run({"config": {}})
        store_transcript(store, t.with_turn(Turn(1, "(A)", commit="A")))
    assert build_stage2([a, b], [tmp_path / "h"]) == [a]


def test_build_stage1_adds_to_a_probe_run_and_says_what_failed(tmp_path: Path) -> None:
    from clearsight.driver import EXIT_FAILED_ITEMS, Execution
    from clearsight.probe.bench.protocol import build_stage1

    run = tmp_path / "run"
    run_probe(probe_config(tmp_path), run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        manifest = store.manifest()
    config, _ = _build_config(tmp_path, samples=12)  # the script has 11: every question fails
    summary, results = build_stage1(config, run, Execution(progress=False))
    assert results == []
    assert (summary.failed, summary.exit_code) == (2, EXIT_FAILED_ITEMS)
    with RunStore.open(run, read_only=True) as store:
        assert store.manifest()["config_hash"] == manifest["config_hash"]  # still the probe's
    with pytest.raises(InputError, match="keep range"):
        build_stage1(_build_config(tmp_path, keep=(3, 20))[0], run)


def test_a_killed_serial_run_keeps_finished_turns_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.probe.unit as probe
    from clearsight.execute import Interrupted
    from clearsight.models.scripted import ScriptedBackend

    class KilledOnSecondTurn(ScriptedBackend):
        def complete(self, requests: Sequence[Request]) -> list[Response]:
            if "Visual assistant:" in requests[0].messages[-1].text:
                raise KeyboardInterrupt  # the user pressed Ctrl-C while turn 2 was generated
            return [Response(texts=('My question is: "What is in the cup?"',))]

    cfg = probe_config(tmp_path, instance_ids=IDS[:1], strategies=("bp",), runs=1)
    monkeypatch.setattr(probe, "_reasoner", lambda spec: KilledOnSecondTurn())
    with pytest.raises(Interrupted):
        run_probe(cfg, tmp_path / "run", progress=False)
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        (record,) = list(store.iter_records())
    assert record.status == "failed"
    assert record.error == "unfinished: 1 turns so far"
    assert len(record.raw["turns"]) == 1
    monkeypatch.undo()
    summary = run_probe(cfg, tmp_path / "run", progress=False)
    assert summary.ok == 1
    (t,) = load_transcripts(tmp_path / "run")
    assert t.stop == "committed"


def test_cli_probe_run_report_and_judges(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    sensor, reasoner = scripts(tmp_path)
    out = tmp_path / "run"
    args = ["probe", "run", "--out", str(out), "--ids", ",".join(IDS), "--reasoner", reasoner]
    args += ["--sensor", sensor, "--strategies", "direct,bp", "--judge", "exact", "--runs", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "8 records written, 0 failed" in result.output
    assert "Table 1" in result.output
    assert (out / "report.html").is_file()
    assert (out / "summary.csv").is_file()
    judged = CliRunner().invoke(app, ["probe", "judges", str(out), "--a", "exact", "--b", "exact"])
    assert judged.exit_code == 0, judged.output
    assert "exact: 1.000" in judged.output
    listed = CliRunner().invoke(app, ["probe", "instances"])
    assert listed.exit_code == 0
    assert "bundled/coffee-drink" in listed.output
    bad = CliRunner().invoke(
        app, ["probe", "build", "--stage", "2", "--out", str(tmp_path / "k.jsonl")]
    )
    assert bad.exit_code == 2
    assert "needs --sessions" in bad.output


def test_report_escapes_model_output(tmp_path: Path) -> None:
    from clearsight.probe.page.report import build_probe_report
    from clearsight.probe.sensor import SensorReply

    i = Instance("q", "x.png", "<b>Q</b>?", ("a", "b"), "B", "seedbench", "scene")
    evil = "<script>alert(1)</script>"
    reply = SensorReply("What?", (evil, evil), 0, evil, 2, 2)
    t = Transcript.start(i, reasoner="r", strategy="bp", sensor="s", k=2)
    t = t.with_turn(Turn(1, evil, query="What?", reply=reply, shown_u=2))
    with RunStore.open(tmp_path / "run") as store:
        store.begin_run({"config": {}})
        store_transcript(store, t.finish(None, "budget"))
    html = build_probe_report(tmp_path / "run").html.read_text()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;Q&lt;/b&gt;" in html


@pytest.mark.slow
def test_real_models_one_conversation() -> None:
    """SmolLM2-135M reasons through the real perceiver sensor (skipped without the models)."""
    pytest.importorskip("transformers")
    from clearsight.models import load_backend
    from clearsight.probe.instances import bundled_instances
    from clearsight.probe.judges import consistency
    from clearsight.probe.reasoner.loop import LoopSettings, run_conversation
    from clearsight.probe.sensor import Sensor

    try:
        sensor = Sensor("perceiver", k=3, judge="embedding", max_new_tokens=8)
        sensor.backend  # noqa: B018 - load now, to skip cleanly without the detectors
        reasoner = load_backend("hf:smollm2-135m")
    except InputError as exc:
        pytest.skip(str(exc))
    instance = next(i for i in bundled_instances() if i.id == "bundled/dog-animal")
    reply = sensor.ask(instance, "What animal is on the porch?", np.random.default_rng(0))
    assert reply.error is None
    assert len(reply.samples) == 3
    assert 1 <= reply.u <= 3
    assert (
        consistency(make_judge(reply.judge), reply.reply, reply.samples, reply.query)[0] == reply.u
    )
    settings = LoopSettings("bp", budget=2, max_new_tokens=16)
    t = run_conversation(instance, reasoner, sensor, settings, rng=np.random.default_rng(0))
    assert t.stop in ("committed", "budget")
    assert 1 <= t.rounds <= 2
    assert t.vlm_calls == 3 * t.queries


def test_the_analyses_run_through_the_driver_and_resume(tmp_path: Path) -> None:
    from clearsight.driver import EXIT_FAILED_ITEMS, Execution
    from clearsight.probe.posthoc.protocol import (
        BELIEF_PROTOCOL,
        QTYPE_PROTOCOL,
        AnalysisConfig,
        run_probe_analysis,
    )

    run = tmp_path / "run"
    run_probe(probe_config(tmp_path), run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        manifest = store.manifest()
    config = AnalysisConfig(judge_model=analysis_judge(tmp_path))
    summary = run_probe_analysis(run, config, Execution(progress=False))
    # 4 bp conversations with queries: a belief trace and query types each; direct: none
    assert {k: s.ok for k, s in summary.stages.items()} == {BELIEF_PROTOCOL: 4, QTYPE_PROTOCOL: 4}
    assert summary.exit_code == 0
    results = load_probe_results(run)
    assert len(results.beliefs) == 4
    assert len(results.queries) == 4
    assert set(results.queries["type"]) == {"Targeted"}
    with RunStore.open(run, read_only=True) as store:
        assert store.manifest()["config_hash"] == manifest["config_hash"]  # still the probe's
    again = run_probe_analysis(run, config, Execution(progress=False))
    assert again.units == 0
    # a judge that cannot answer fails every item: the summary says so with the right code
    broken = tmp_path / "broken.jsonl"
    broken.write_text("")
    bad = run_probe_analysis(
        run,
        AnalysisConfig(judge_model=f"scripted:{broken}", belief=False),
        Execution(progress=False),
    )
    assert bad.failed == 4
    assert bad.exit_code == EXIT_FAILED_ITEMS


def test_every_stored_item_is_keyed_by_its_stored_json(tmp_path: Path) -> None:
    """Conversations, analyses and build samples in one run: each item's key is the recipe
    every probe kind always used, over the JSON stored for it (so a run from before the typed
    specs resumes with nothing pending)."""
    from clearsight.driver import Execution
    from clearsight.probe.bench.protocol import build_stage1
    from clearsight.probe.posthoc.protocol import AnalysisConfig, run_probe_analysis
    from clearsight.seeding import content_hash
    from clearsight.specs import json_key

    run = tmp_path / "run"
    config = probe_config(tmp_path)
    run_probe(config, run, progress=False)
    analyses = AnalysisConfig(judge_model=analysis_judge(tmp_path), belief_readout="letters")
    run_probe_analysis(run, analyses, Execution(progress=False))
    build_stage1(_build_config(tmp_path)[0], run, Execution(progress=False))
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records(raw=False))
    assert Counter(r.protocol for r in records) == {
        "probe": 8,
        "probe.belief": 4,
        "probe.qtype": 4,
        "probe.build": 2,
    }
    for r in records:
        assert r.status == "ok"
        assert r.key == content_hash([r.protocol, r.spec]) == json_key(r.protocol, r.spec)
    conversations = {r.key: r.spec for r in records if r.protocol == "probe"}
    assert conversations == {s.key: s.to_json() for s in plan_probe(config)}
    bp = {k for k, spec in conversations.items() if spec["strategy"] == "bp"}
    for kind in ("probe.belief", "probe.qtype"):
        analysed = [r.spec for r in records if r.protocol == kind]
        assert {spec["transcript"] for spec in analysed} == bp
        assert {spec["judge"] for spec in analysed} == {analyses.judge_model}
    # rerun, every kind finds its items stored under those keys: nothing is pending, nothing
    # moves (a real schema-1 probe run's re-keying: tests/test_store_migration.py)
    assert run_probe(config, run, progress=False).units == 0
    assert run_probe_analysis(run, analyses, Execution(progress=False)).units == 0
    assert build_stage1(_build_config(tmp_path)[0], run, Execution(progress=False))[0].units == 0
    with RunStore.open(run, read_only=True) as store:
        assert [(r.key, r.spec) for r in store.iter_records(raw=False)] == [
            (r.key, r.spec) for r in records
        ]


def test_the_analyses_refuse_what_is_not_a_probe_run(tmp_path: Path) -> None:
    from clearsight.probe.posthoc.protocol import AnalysisConfig, run_probe_analysis

    config = AnalysisConfig(judge_model=analysis_judge(tmp_path))
    with pytest.raises(InputError, match="holds no probe run"):
        run_probe_analysis(tmp_path / "nothing", config)
    assert not (tmp_path / "nothing").exists()
    with RunStore.open(tmp_path / "sweep") as store:
        store.begin_run({"config": {"n": 1}, "protocol": "sweep"})
    with pytest.raises(InputError, match="is a sweep run, not a probe run"):
        run_probe_analysis(tmp_path / "sweep", config)


def test_table_9_counts_answered_calls_and_shows_failed_ones_apart() -> None:
    from clearsight.probe.numbers.accuracy import calls_table

    frame = pd.DataFrame(
        {
            "dataset": ["seedbench"] * 4,
            "strategy": ["bp", "bp", "react", "react"],
            "reasoner": ["r"] * 4,
            "vlm_calls": [6, 9, 3, 3],
            "failed_calls": [3, 0, 0, 0],
        }
    )
    row = calls_table(frame).set_index("dataset").loc["seedbench"]
    assert (row["bp / r"], row["react / r"], row["bp / r (failed)"]) == (7.5, 3.0, 1.5)
    assert "react / r (failed)" not in row.index  # no failed call, no column
    assert list(calls_table(frame.assign(failed_calls=0)).columns) == [
        "dataset",
        "bp / r",
        "react / r",
    ]


def test_belief_figure_draws_one_trace_per_conversation() -> None:
    from io import BytesIO

    from PIL import Image

    from clearsight.probe.numbers.convergence import belief_curves
    from clearsight.probe.page.figures import belief_figure

    beliefs = pd.DataFrame(
        {"p_correct": [[1 / 3, 0.5, 0.8], [1 / 3, 0.2]], "correct": [True, False]}
    )
    png = belief_figure(belief_curves(beliefs))
    assert png is not None
    assert Image.open(BytesIO(png)).size[0] > 300
    assert belief_figure(belief_curves(beliefs.iloc[:0])) is None


class _Judge:
    """A generating judge that answers as the paper's: a rationale, then the JSON label."""

    name = "fake-judge"
    capabilities = Capabilities(generate=True)

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        self.prompts += [r.messages[-1].text for r in requests]
        reply = 'It asks about one attribute.\n{"type": "targeted", "confidence": 0.85}'
        return [Response(texts=(reply,)) for _ in requests]


def test_query_types_judged_with_a_rationale_and_a_json_label() -> None:
    from clearsight.probe.posthoc.querytypes import parse_query_judgement
    from clearsight.probe.sensor import SensorReply

    i = Instance("q", "x.png", "Which colour?", ("red", "blue"), "B", "seedbench", "scene")
    reply = SensorReply("What colour?", ("blue", "blue"), 0, "blue", 2, 2)
    t = Transcript.start(i, reasoner="r", strategy="bp", sensor="s", k=2)
    t = t.with_turn(Turn(1, "q1", query="Describe the image", reply=reply, shown_u=2))
    t = t.with_turn(Turn(2, "q2", query="What colour is it?", reply=reply, shown_u=2))
    judge = _Judge()
    first, second = classify_queries(t, judge)
    assert (first["type"], first["parsed"]) == ("Targeted", "json")  # the fake's one answer
    assert (second["type"], second["confidence"], second["parsed"]) == ("Targeted", 0.85, "json")
    assert second["rationale"] == "It asks about one attribute."
    # the judge sees the question, the query, its round and the earlier queries
    assert "Round 2 question: What colour is it?" in judge.prompts[1]
    assert "Earlier questions: Describe the image" in judge.prompts[1]
    assert "Which colour?" in judge.prompts[0]
    # forgiving but never guessing
    assert parse_query_judgement('{"type": "Comparative", "confidence": 70}')["confidence"] == 0.7
    assert parse_query_judgement('x {"type": "Comparative", "confidence": "high"}') == {
        "type": "Comparative",
        "confidence": None,
        "rationale": "x",
        "parsed": "json",
    }
    named = parse_query_judgement("This is Confirmatory, I think {not json}")
    assert (named["type"], named["parsed"]) == ("Confirmatory", "name")
    nothing = parse_query_judgement('{"type": "Rhetorical"} and no name')
    assert (nothing["type"], nothing["parsed"]) == (None, None)


def test_a_finished_probe_run_resumes_without_planning_or_loading_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe's plan fingerprint: a rerun of a finished run returns before its models load;
    a changed instance file or prompt plans again."""
    import dataclasses

    from clearsight import driver
    from clearsight.driver import Execution
    from clearsight.probe import protocol

    calls: list[int] = []

    def plan(config: Any) -> Any:
        calls.append(1)
        return plan_probe(config)

    counting = dataclasses.replace(protocol.PROBE, plan=plan)
    run, config = tmp_path / "run", probe_config(tmp_path)
    first = driver.run(counting, config, run, Execution(progress=False))
    assert first.ok > 0
    assert calls == [1]
    monkeypatch.setattr(driver, "check_models", _refuse)  # nothing may load a model now
    again = driver.run(counting, config, run, Execution(progress=False))
    assert (again.units, calls) == (0, [1])
    monkeypatch.setattr(protocol, "prompt_hash", lambda s: f"edited {s}")
    with pytest.raises(AssertionError, match="checked the models"):
        driver.run(counting, config, run, Execution(progress=False))


def _refuse(*_: Any) -> None:
    raise AssertionError("checked the models")


def test_report_beside_other_runs(tmp_path: Path) -> None:
    """``others`` put further runs' settings beside the run's own; a shared setting is refused
    (its run indices would mix in the cross-run numbers)."""
    from clearsight.probe import analyse_probe, build_probe_report

    run, other = tmp_path / "run", tmp_path / "other"
    run_probe(probe_config(tmp_path, strategies=("bp",)), run, progress=False)
    run_probe(probe_config(tmp_path, strategies=("bp",), signals=("none",)), other, progress=False)
    alone, both = analyse_probe(run), analyse_probe(run, [other])
    assert both.conversations == alone.conversations + len(load_probe_results(other).transcripts)
    assert sorted(both.domains["signal"].unique()) == ["none", "true"]
    own = both.domains[both.domains["signal"] == "true"].reset_index(drop=True)
    pd.testing.assert_frame_equal(own, alone.domains)
    csv = pd.read_csv(build_probe_report(run, [other]).summary_csv)
    assert sorted(csv["signal"]) == ["none", "true"]
    with pytest.raises(InputError, match="both hold the setting"):
        analyse_probe(run, [run])
