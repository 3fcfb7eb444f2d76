"""TGS-Bench construction for any problem set: the build's stages with a scripted generator and
judge (exact retention, rejection reasons, injectors), the file format's writer and loader
(a hand-written file, its faults, a fuzzed parser), and the built pool scored by a grounding
run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clearsight.grounding.bench.file import (
    BenchItem,
    BenchPair,
    TgsBench,
    load_bench,
    manifest_path,
    write_bench,
)
from clearsight.grounding.bench.protocol import BuildBenchConfig, run_build_bench
from clearsight.grounding.bench.results import read_bench, reason_kind
from clearsight.grounding.bench.use import bench_problems, retention_table
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.trajectories.trajectory import Trajectory
from clearsight.validate import InputError

# Four problems of an external benchmark (no solution field); the generator gets 3 right.
PROBLEMS = [
    {"id": "a", "question": "QALPHA: 12 apples and 30 more?", "answer": "42"},
    {"id": "b", "question": "QBETA: 3 boxes of 2 and one more?", "answer": "7"},
    {"id": "c", "question": "QGAMMA: a dozen minus two?", "answer": "10"},
    {"id": "d", "question": "QDELTA: half of six?", "answer": "3"},
]
# The generator's replies (after the "Observation:" the assistant turn starts with).
GENERATED = {
    "QALPHA": " There are 12 apples and 30 more arrive.\nReasoning: Adding 12 and 30 gives 42."
    "\nAnswer: 42",
    "QBETA": " Three boxes hold 2 each, plus 1.\nReasoning: 3 * 2 = 6 and 6 + 1 = 7.\nAnswer: 7",
    # no number and no verb in the observation: no rule can inject a vision error
    "QGAMMA": " A dozen, take away two.\nReasoning: 12 - 2 = 10.\nAnswer: 10",
    "QDELTA": " Six split in halves.\nReasoning: 6 / 2 = 4.\nAnswer: 4",  # wrong
}
# The model's edits: every vision edit is refused (too different); the reasoning edit fits
# problem a only, so b and c fall back to the rule.
EDITS = [
    {"match": "Here is an observation", "texts": ["Something else entirely, with no overlap."]},
    {"match": "Here is a reasoning step", "texts": ["Adding 12 and 30 gives 43."]},
]


def _problems_file(tmp_path: Path) -> Path:
    path = tmp_path / "ext.jsonl"
    lines = [json.dumps({**p, "benchmark": "ext"}) for p in PROBLEMS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _script(tmp_path: Path, judge: list[dict[str, Any]] | None = None) -> str:
    entries = [*(judge or []), *EDITS]
    entries += [{"match": k, "texts": [v]} for k, v in GENERATED.items()]
    path = tmp_path / "script.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    return f"scripted:{path}"


def _build(tmp_path: Path, **update: Any) -> tuple[BuildBenchConfig, TgsBench, Path]:
    judge = update.pop("judge_script", None)
    model = _script(tmp_path, judge or [])
    cfg = BuildBenchConfig(
        generator=model,
        judge=model if judge else None,
        generator_options={},
        n_problems=0,
        jsonl=(str(_problems_file(tmp_path)),),
        **update,
    )
    run = tmp_path / "run"
    summary = run_build_bench(cfg, run, progress=False)
    assert summary.failed == 0
    return cfg, read_bench(cfg, run), run


def test_a_build_keeps_right_answers_and_one_error_pairs_with_their_reasons(
    tmp_path: Path,
) -> None:
    cfg, bench, run = _build(tmp_path)
    m = bench.manifest
    assert m["counts"]["ext"] == {
        "attempted": 4,
        "good": 3,
        "vision": 2,
        "reasoning": 3,
        "answer": 3,
    }
    assert m["retention"]["ext"] == pytest.approx(
        {"good": 0.75, "vision": 0.5, "reasoning": 0.75, "answer": 0.75}, abs=1e-12
    )
    assert m["counts"]["all"] == m["counts"]["ext"]
    assert m["rejections"] == {"check": {"wrong answer": 1}, "vision": {"no edit": 1}}
    assert m["injectors"] == {
        "vision": {"rule": 2},
        "reasoning": {"model": 1, "rule": 2},
        "answer": {"rule": 3},
    }
    assert sum(m["model_edits_refused"]["vision"].values()) == 2
    assert sum(m["model_edits_refused"]["reasoning"].values()) == 2
    by_id = {i.problem.id: i for i in bench.items}
    assert set(by_id) == {"ext/a", "ext/b", "ext/c"}
    a = by_id["ext/a"]
    assert a.good == Trajectory(
        "There are 12 apples and 30 more arrive.", "Adding 12 and 30 gives 42.", "42"
    )
    assert a.pairs["reasoning"].bad.reasoning == "Adding 12 and 30 gives 43."
    assert a.pairs["reasoning"].injector == "model"
    assert a.pairs["reasoning"].model_refused is None
    vision = a.pairs["vision"]
    assert (vision.injector, vision.rule) == ("rule", "number_change")
    assert vision.model_refused is not None  # the model's edit was refused, with the reason
    assert vision.bad.vision != a.good.vision
    assert (vision.bad.reasoning, vision.bad.answer) == (a.good.reasoning, a.good.answer)
    answer = a.pairs["answer"]
    assert answer.rule == "numeric_change"
    assert answer.bad.answer != "42"
    assert set(by_id["ext/c"].pairs) == {"reasoning", "answer"}
    src = m["sources"][0]
    assert (src["benchmark"], src["count"]) == ("ext", 4)
    assert src["file_sha256"] == hashlib.sha256((tmp_path / "ext.jsonl").read_bytes()).hexdigest()
    # resumable: a second run has nothing left to do and reads the same pool
    again = run_build_bench(cfg, run, progress=False)
    assert again.units == 0
    assert read_bench(cfg, run) == bench


def test_the_judge_rejects_a_good_trajectory_and_scores_every_pair(tmp_path: Path) -> None:
    judge = [
        {"match": "QBETA: 3 boxes of 2 and one more?\n\nSolution:", "candidate_probs": {
            "Yes": 0.2, "No": 0.6}},
        {"match": "\n\nSolution:\n", "candidate_probs": {"Yes": 0.7, "No": 0.1}},
        {"match": "Solution 1:", "candidate_probs": {"1": 0.25, "2": 0.75}},
    ]  # fmt: skip
    _, bench, _ = _build(tmp_path, judge_script=judge)
    m = bench.manifest
    assert m["counts"]["ext"]["good"] == 2
    assert m["rejections"]["check"] == {"wrong answer": 1, "judge rejected": 1}
    pairs = [p for item in bench.items for p in item.pairs.values()]
    assert len(pairs) == m["counts"]["ext"]["vision"] + 2 + 2
    # the bad side is shown first or second by seed; P(bad) is 0.25 or 0.75 accordingly
    assert {round(p.judge_p_bad or -1, 6) for p in pairs} <= {0.25, 0.75}
    picked = m["judge_picked_bad"]
    assert sum(v["n"] for v in picked.values()) == len(pairs)


def test_reasons_are_counted_by_their_kind() -> None:
    assert reason_kind("wrong answer: '41.0' where the gold is '42.0'") == "wrong answer"
    assert reason_kind("character similarity 0.812 < 0.9") == "character similarity # < #"
    assert reason_kind("length changes by 12.5% > 10%") == "length changes by # > #"


# ------------------------------------------------------------------------------ the file


ITEM = {
    "id": "ext/a",
    "problem": {
        "id": "ext/a",
        "benchmark": "ext",
        "question": "How many?",
        "gold": "42",
        "answer_type": "number",
        "image": None,
        "options": [],
        "meta": None,
    },
    "good": {"vision": "12 and 30.", "reasoning": "12 + 30 = 42.", "answer": "42"},
    "pairs": {
        "answer": {
            "bad": {"vision": "12 and 30.", "reasoning": "12 + 30 = 42.", "answer": "43"},
            "injector": "rule",
            "rule": "numeric_change",
            "model_refused": None,
            "similarity": 0.5,
            "judge_p_bad": None,
        }
    },
}


def _hand_written(tmp_path: Path, lines: list[str], **manifest: Any) -> Path:
    path = tmp_path / "bench.jsonl"
    data = ("\n".join(lines) + "\n").encode()
    base = {
        "format": "clearsight.tgs-bench",
        "version": 1,
        "pairs_sha256": hashlib.sha256(data).hexdigest(),
        "n_items": len(lines),
    }
    path.write_bytes(data)
    manifest_path(path).write_text(json.dumps({**base, **manifest}), encoding="utf-8")
    return path


def test_a_hand_written_file_loads_into_problems_and_pairs(tmp_path: Path) -> None:
    bench = load_bench(_hand_written(tmp_path, [json.dumps(ITEM)]))
    (item,) = bench.items
    assert item.problem.id == "ext/a"
    assert item.pairs["answer"].bad.answer == "43"
    (problem,) = bench_problems(bench)
    assert problem.solution == {
        "observation": "12 and 30.",
        "reasoning": "12 + 30 = 42.",
        "answer": "42",
    }


def _with(path: list[str], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(ITEM))
    target = out
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("line", "manifest", "message"),
    [
        (ITEM, {"version": 2}, "version 2, this clearsight reads version 1"),
        (ITEM, {"format": "other"}, "its format is not 'clearsight.tgs-bench'"),
        (ITEM, {"pairs_sha256": "0" * 64}, "its sha256 is not the manifest's pairs_sha256"),
        (ITEM, {"n_items": 2}, "1 items, the manifest says 2"),
        (_with(["id"], "x"), {}, r"bench.jsonl:1: id 'x' is not its problem's id"),
        (
            _with(["pairs", "answer", "bad", "vision"], "13 and 30."),
            {},
            "must differ from the good one on answer only, it differs on vision, answer",
        ),
        (_with(["pairs", "answer", "injector"], "hand"), {}, "injector is model or rule"),
        (
            _with(["pairs", "vision"], {}),
            {},
            "pair vision: bad: an object with exactly vision, reasoning, answer",
        ),
        (_with(["pairs", "other"], {}), {}, "pairs: an object keyed by some of"),
        (_with(["problem", "gold"], 42), {}, "missing or non-string gold"),
        (_with(["good", "answer"], " "), {}, "good: the answer is empty"),
    ],
)
def test_a_bad_file_is_one_clear_error(
    tmp_path: Path, line: dict[str, Any], manifest: dict[str, Any], message: str
) -> None:
    path = _hand_written(tmp_path, [json.dumps(line)], **manifest)
    with pytest.raises(InputError, match=message) as err:
        load_bench(path)
    assert "\n" not in str(err.value)


def test_a_problem_given_twice_is_named_with_its_lines(tmp_path: Path) -> None:
    other = _with(["problem", "gold"], "43")
    path = _hand_written(tmp_path, [json.dumps(ITEM), json.dumps(ITEM), json.dumps(other)])
    with pytest.raises(InputError) as err:
        load_bench(path)
    assert str(err.value) == (
        f"duplicate TGS-Bench problem id 'ext/a': given in {path}:1 and again in {path}:2 "
        "(ids must be unique)"
    )


def test_a_missing_manifest_or_invalid_json_is_named(tmp_path: Path) -> None:
    path = _hand_written(tmp_path, ["{not json"])
    with pytest.raises(InputError, match=r"invalid JSON in .*bench.jsonl:1"):
        load_bench(path)
    manifest_path(path).unlink()
    with pytest.raises(InputError, match=r"its manifest .*bench\.manifest\.json is missing"):
        load_bench(path)


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_traj = st.builds(Trajectory, _text, _text, _text.filter(lambda s: bool(s.strip())))


@st.composite
def _items(draw: st.DrawFn) -> BenchItem:
    good = draw(_traj)
    pairs = {}
    for axis in draw(st.sets(st.sampled_from(["vision", "reasoning", "answer"]), min_size=1)):
        new = draw(_text.filter(lambda s, a=axis: s != getattr(good, a) and bool(s.strip())))
        bad = Trajectory(**{**good.to_json(), axis: new})
        pairs[axis] = BenchPair(bad, draw(st.sampled_from(["model", "rule"])), None, None, 0.5)
    problem = Problem(draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True)), "b", "Q?", "1", "number")
    return BenchItem(problem, good, pairs)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=st.lists(_items(), max_size=4, unique_by=lambda i: i.problem.id))
def test_writer_and_loader_round_trip(tmp_path: Path, items: list[BenchItem]) -> None:
    path, _ = write_bench(TgsBench(tuple(items), {"generator": "g"}), tmp_path / "b.jsonl")
    back = load_bench(path)
    assert back.items == tuple(items)
    assert back.manifest["generator"] == "g"
    assert back.manifest["n_pairs"] == sum(len(i.pairs) for i in items)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.sampled_from(["id", "problem", "good", "pairs"]),
    value=_json,
)
def test_the_parser_refuses_any_malformed_item_with_an_input_error(
    tmp_path: Path, key: str, value: Any
) -> None:
    line = {**ITEM, key: value}
    path = _hand_written(tmp_path, [json.dumps(line)])
    error = None
    try:
        bench = load_bench(path)
    except InputError as exc:
        error = str(exc)
    if error is None:
        assert len(bench.items) == 1  # what loads is a whole item
    else:
        assert error.startswith(f"invalid TGS-Bench file {path}:1: ")


def test_the_retention_table_states_kept_over_attempted() -> None:
    counts = {"attempted": 4, "good": 3, "vision": 2, "reasoning": 3}
    manifest = {"counts": {"all": counts, "ext": counts, "b": {"attempted": 0}}}
    table = retention_table(manifest)
    assert list(table["benchmark"]) == ["b", "ext", "all"]
    row = table.set_index("benchmark").loc["ext"]
    assert (row["good"], row["vision"], row["answer"]) == ("3 (0.750)", "2 (0.500)", "0 (0.000)")
    assert table.set_index("benchmark").loc["b", "good"] == "0 (n/a)"
    assert list(table.columns) == [
        "benchmark",
        "attempted",
        "good",
        "vision",
        "reasoning",
        "answer",
    ]


# ------------------------------------------------------------------------------ used by a run


def test_a_built_bench_is_scored_by_a_grounding_run(tmp_path: Path, tiny_llama_path: Path) -> None:
    from clearsight.grounding import build_grounding_report
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.protocol import run_grounding
    from clearsight.grounding.specs import EDIT, ELICIT
    from clearsight.store import RunStore

    _, bench, _ = _build(tmp_path)
    path, _ = write_bench(bench, tmp_path / "out" / "bench.jsonl")
    cfg = GroundingConfig(
        model=f"hf:{tiny_llama_path}",
        generator=None,
        n_problems=0,
        bench=str(path),
        max_new_tokens=2,
        mask_ratios=(0.0,),
        variation=False,
        hesitation=False,
        n_boot=100,
    )
    run = tmp_path / "grounding"
    summary = run_grounding(cfg, run, progress=False)
    assert summary.stages[EDIT].units == 0  # the bench brings its pairs: nothing to edit
    loaded = load_bench(path)
    want = {
        (i.problem.id, f"bench/{a}/bad"): p.bad for i in loaded.items for a, p in i.pairs.items()
    }
    want |= {(i.problem.id, "bench/good"): i.good for i in loaded.items}
    with RunStore.open(run, read_only=True) as store:
        got = {
            (r.spec["problem"]["id"], r.spec["variant"]): Trajectory(**r.spec["trajectory"])
            for r in store.iter_records(kind=ELICIT, raw=False)
            if r.spec["variant"].startswith("bench/")
        }
        assert store.manifest()["tgs_bench"]["pairs_sha256"] == loaded.manifest["pairs_sha256"]
    assert got == want
    paths, analysis = build_grounding_report(run, n_boot=100)
    assert analysis.overall["tgs_pair_reasoning"].n_items == 3
    html = paths.html.read_text(encoding="utf-8")
    assert "TGS-Bench retention" in html
    assert "2 (0.500)" in html  # the vision retention of the build


def test_build_bench_on_the_command_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    problems = _problems_file(tmp_path)
    out = tmp_path / "b" / "bench.jsonl"
    args = ["grounding", "build-bench", "--out", str(out), "--run-dir", str(tmp_path / "run")]
    args += ["--instances", str(problems), "--generator", _script(tmp_path)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output
    assert "rejections: check: {'wrong answer': 1}" in res.output
    assert load_bench(out).manifest["counts"]["ext"]["good"] == 3
    bad = CliRunner().invoke(
        app, ["grounding", "build-bench", "--out", str(out), "--instances", "none.jsonl"]
    )
    assert bad.exit_code == 2
    assert "error: no problems in none.jsonl" in bad.output


def test_grounding_takes_a_bench_file_alone_unless_other_sources_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import clearsight.grounding.protocol as protocol
    from clearsight.cli import app
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.plan import load_problems

    seen: list[GroundingConfig] = []

    def run_grounding(config: GroundingConfig, run_dir: Path, **_: object) -> None:
        seen.append(config)
        raise InputError(f"stopped before the run with {len(load_problems(config))} problems")

    monkeypatch.setattr(protocol, "run_grounding", run_grounding)
    path = _hand_written(tmp_path, [json.dumps(ITEM)])
    runner = CliRunner()
    alone = runner.invoke(app, ["grounding", "--bench", str(path), "--out", str(tmp_path / "r")])
    assert "stopped before the run with 1 problems" in alone.output
    both = ["grounding", "--bench", str(path), "--n", "2", "--out", str(tmp_path / "r")]
    assert "stopped before the run with 3 problems" in runner.invoke(app, both).output
    assert [(c.bench, c.n_problems) for c in seen] == [(str(path), 0), (str(path), 2)]
    manifest_path(path).unlink()
    bad = runner.invoke(app, ["grounding", "--bench", str(path), "--out", str(tmp_path / "r")])
    assert bad.exit_code == 2
    assert f"error: invalid TGS-Bench file {path}: its manifest" in bad.output
    assert not (tmp_path / "r").exists()
