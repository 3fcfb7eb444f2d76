"""Trajectory grounding without a model: problems, segmentation, pairs, scores, bad inputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clearsight.grounding.bench.pairs import check_edit, inject_rule, perturb_answer, similarity
from clearsight.grounding.hesitation import (
    event_pairs,
    find_hesitations,
    hesitation_variant,
    parse_hesitation_variant,
    stable_share,
)
from clearsight.grounding.problems.bundled import TEXT_FAMILIES, bundled_problems, generate
from clearsight.grounding.problems.hub import load_benchmark
from clearsight.grounding.problems.images import render_image
from clearsight.grounding.problems.problem import Problem, is_correct, load_jsonl, normalise_answer
from clearsight.grounding.tgs import item_differences, scores, self_variant, two_stage_score
from clearsight.grounding.trajectories.parsing import (
    parse_trajectory,
    segmenter_agreement,
    split_at_slot,
)
from clearsight.grounding.trajectories.trajectory import Trajectory, good_trajectory
from clearsight.grounding.variation import share_below
from clearsight.seeding import rng_for
from clearsight.validate import InputError


def test_bundled_problems_are_pure_and_their_solutions_are_correct() -> None:
    a = bundled_problems(40)
    b = bundled_problems(40)
    assert [p.to_json() for p in a] == [p.to_json() for p in b]
    assert {p.id.split("/")[0] for p in a} == set(TEXT_FAMILIES)
    for p in a:
        assert p.solution is not None
        assert is_correct(p.solution["answer"], p), p.id
        assert not is_correct("maybe", p)
    assert bundled_problems(3, seed=1)[0].question != a[0].question


def test_arithmetic_answers_are_exact() -> None:
    p = generate("shop", 0)
    nums = [int(x) for x in __import__("re").findall(r"\d+", p.question)]
    a, b, c, d = nums[:4]
    assert int(p.gold) == a + b * c - d


def test_visual_problems_draw_their_pictures() -> None:
    chart = generate("chart", 3)
    img = render_image(chart.image or "")
    assert img.dtype == np.uint8
    assert img.ndim == 3
    assert img.shape[2] == 3
    assert img.std() > 10  # something was drawn
    count = generate("count", 0)
    photo = render_image(count.image or "")
    red = (photo[..., 0] == 255) & (photo[..., 1] == 0) & (photo[..., 2] == 0)
    assert red.sum() > 100  # the boxes are drawn in pure red
    assert int(count.gold) >= 1


def test_answers_normalise_by_type() -> None:
    assert normalise_answer("The answer is 1,200 apples", "number") == "1200.0"
    assert normalise_answer("3/4", "number") == normalise_answer("0.75", "number")
    assert normalise_answer("I pick (B) here", "letter") == "B"
    assert normalise_answer("True.", "boolean") == "yes"
    assert normalise_answer("nothing", "number") is None


def test_benchmark_layouts_load(tmp_path: Path) -> None:
    d = tmp_path / "A-OKVQA"
    d.mkdir()
    rec = {
        "question_id": "q1",
        "question": "What is the animal?",
        "choices": ["cat", "dog", "cow", "pig"],
        "correct_choice_idx": 2,
        "image": "img/1.jpg",
    }
    (d / "val.jsonl").write_text(json.dumps(rec) + "\n")
    (p,) = load_benchmark("A-OKVQA", tmp_path)
    assert p.gold == "C"
    assert p.answer_type == "letter"
    assert "C. cow" in p.question
    assert p.image == str(d / "img/1.jpg")
    mv = tmp_path / "MathVista"
    mv.mkdir()
    (mv / "testmini.jsonl").write_text(
        json.dumps({"pid": "7", "question": "How many?", "answer": "12", "image": "a.png"}) + "\n"
    )
    (q,) = load_benchmark("MathVista", tmp_path)
    assert (q.id, q.gold, q.answer_type) == ("MathVista/7", "12", "number")
    with pytest.raises(InputError, match="does not exist"):
        load_benchmark("Geo3K", tmp_path)
    with pytest.raises(InputError, match="unknown benchmark"):
        load_benchmark("Nope", tmp_path)
    own = tmp_path / "mine.jsonl"
    own.write_text(json.dumps({"id": 1, "question": "Is it?", "answer": "yes"}) + "\n")
    (r,) = load_jsonl(own)
    assert r.answer_type == "boolean"
    assert r.benchmark == "mine"


def test_answer_perturbations_follow_the_rules() -> None:
    rng = rng_for("t")
    letter = Problem("x", "b", "Q? A. a B. b C. c", "C", "letter", options=("a", "b", "c"))
    assert perturb_answer("C", letter, rng) == ("A", "letter_shift")
    boolean = Problem("y", "b", "Q?", "yes", "boolean")
    assert perturb_answer("yes", boolean, rng) == ("no", "boolean_flip")
    number = Problem("z", "b", "Q?", "5/14", "number")
    bad, rule = perturb_answer("5/14", number, rng)
    assert rule == "structured_number"
    assert bad != "5/14"
    assert "/" in bad
    bad, rule = perturb_answer("42", Problem("w", "b", "Q?", "42", "number"), rng)
    assert rule == "numeric_change"
    assert bad != "42"
    assert bad.isdigit()
    bad, _ = perturb_answer("2.5", Problem("v", "b", "Q?", "2.5", "number"), rng)
    assert bad != "2.5"
    assert bad.startswith("2.")
    with pytest.raises(InputError, match="text answers"):
        perturb_answer("blue", Problem("u", "b", "Q?", "blue", "text"), rng)


def test_edit_checks_and_rule_injection() -> None:
    text = "The boxes hold 2 x 6 = 12 coins. Before selling it has 58 + 12 = 70."
    assert check_edit(text, text) == "the edit changes nothing"
    assert "similarity" in (check_edit(text, "Something else entirely.") or "")
    assert "length" in (check_edit(text, text + " Ok then.") or "")
    edited, rule = inject_rule(text, "reasoning", rng_for("r"))
    assert rule == "number_change"
    assert check_edit(text, edited) is None
    # the reasoning rule changes a result (a number right after "=")
    assert edited.split("=")[0] == text.split("=")[0]
    neg, rule = inject_rule(
        "All cats are mammals, and Tom is one of the cats.", "vision", rng_for("v")
    )
    assert rule == "negation"
    assert "are not mammals" in neg
    assert similarity("abc", "abc") == 1.0


def test_slot_parsing_rejects_missing_slots_and_bad_numerals() -> None:
    ok = split_at_slot("Observation: x\nReasoning: y\nAnswer: 3\nConfidence (0-10): 7")
    assert ok.written == 7
    assert ok.body.endswith("Answer: 3\n")
    assert split_at_slot("Answer: 3\nConfidence: ").written is None
    with pytest.raises(InputError, match="no confidence slot"):
        split_at_slot("Observation: x\nAnswer: 3")
    with pytest.raises(InputError, match=r"not a numeral 0\.\.10"):
        split_at_slot("Answer: 3\nConfidence (0-10): 15")
    with pytest.raises(InputError, match=r"not a numeral 0\.\.10"):
        split_at_slot("Answer: 3\nConfidence (0-10): 7.5")


def test_tagged_and_free_trajectories_are_segmented() -> None:
    t = parse_trajectory("Observation: 3 cats.\nReasoning: 3 + 1 = 4.\nAnswer: 4\nConfidence: 9")
    assert t == Trajectory("3 cats.", "3 + 1 = 4.", "4")
    free = parse_trajectory("The bag has 3 red marbles. So 3 + 2 = 5 in all. The answer is 5.")
    assert free.vision == "The bag has 3 red marbles."
    assert free.reasoning.startswith("So 3 + 2")
    assert free.answer == "5"
    with pytest.raises(InputError, match="no final answer"):
        parse_trajectory("I am not sure what to do here")


def test_rendered_spans_point_at_the_segments() -> None:
    t = Trajectory("seen", "thought", "42")
    text, spans = t.render()
    assert text.endswith("Confidence (0-10): ")
    assert [text[a:b] for a, b in spans.values()] == ["seen", "thought", "42"]
    assert Trajectory("", "", "1").rationale_spans() == []


def test_segmenter_agrees_with_the_hand_labels() -> None:
    a = segmenter_agreement()
    assert a.trajectories == 30
    assert a.sentences > 100
    assert a.rate >= 0.9  # measured 0.953 (102/107)


def test_hesitation_events_truncate_before_and_after_the_marker() -> None:
    t = Trajectory("There are 4 cats.", "4 + 2 = 6. Wait, let me re-check the sum. It is 6.", "6")
    (h,) = find_hesitations(t)
    assert h.marker in ("wait", "let me re-check")
    assert h.pre.reasoning == "4 + 2 = 6."
    assert h.post.reasoning.endswith("re-check the sum.")
    assert h.pre.answer == h.post.answer == "6"
    assert find_hesitations(Trajectory("a", "b", "c")) == []
    assert stable_share([0.5, 0.5], [0.51, 0.6]) == 0.5


def test_every_hesitation_event_is_scored_and_paired() -> None:
    t = Trajectory(
        "Hmm, the bars look equal.",
        "First 3 + 4 = 7. Wait, that is the wrong bar. Actually it is 3 + 5 = 8.",
        "8",
    )
    events = find_hesitations(t)
    assert [e.marker for e in events] == ["hmm", "wait", "actually"]
    # each event truncates just before and just after its own sentence
    assert (events[0].pre.vision, events[0].post.vision) == ("", "Hmm, the bars look equal.")
    assert events[2].pre.reasoning == "First 3 + 4 = 7. Wait, that is the wrong bar."
    assert events[2].post.reasoning.endswith("3 + 5 = 8.")
    # the first event keeps the names runs had when only it was scored
    names = [hesitation_variant(k, s) for k in range(3) for s in ("pre", "post")]
    assert names[:2] == ["hesitation/pre", "hesitation/post"]
    assert names[4:] == ["hesitation/2/pre", "hesitation/2/post"]
    assert [parse_hesitation_variant(n) for n in names[2:4]] == [(1, "pre"), (1, "post")]
    assert parse_hesitation_variant("self/r0.00") is None
    elic = pd.DataFrame(
        {
            "problem": ["p"] * 6 + ["q"],
            "benchmark": ["b"] * 7,
            "variant": [*names, "hesitation/pre"],  # q's post is missing: no pair
            "expected": [0.8, 0.8, 0.7, 0.5, 0.6, 0.65, 0.9],
        }
    )
    pairs = event_pairs(elic)
    assert pairs[["problem", "event"]].values.tolist() == [["p", 0], ["p", 1], ["p", 2]]
    np.testing.assert_allclose(pairs["post"] - pairs["pre"], [0.0, -0.2, 0.05])


def _frame() -> pd.DataFrame:
    rows = []
    for i in range(6):
        bench = "b1" if i < 3 else "b2"
        vals = {
            self_variant(0.0): 0.8,
            self_variant(1.0): 0.6 if bench == "b1" else 0.7,
            "bench/good": 0.7,
            "bench/vision/bad": 0.7,
            "bench/reasoning/bad": 0.6,
            "bench/answer/bad": 0.4,
        }
        rows += [
            {"problem": f"p{i}", "benchmark": bench, "variant": v, "expected": e}
            for v, e in vals.items()
        ]
    return pd.DataFrame(rows)


def test_tgs_scores_average_within_then_across_benchmarks() -> None:
    d = item_differences(_frame())
    assert np.allclose(d["tgs_self"], [0.2] * 3 + [0.1] * 3)
    correct = pd.DataFrame({"problem": [f"p{i}" for i in range(6)], "correct": [1, 0] * 3})
    s = scores(_frame(), correct, n_boot=200)
    assert s["tgs_self"].interval.estimate == pytest.approx(0.15)
    assert s["tgs_pair_answer"].interval.estimate == pytest.approx(0.3)
    assert s["tgs_pair_vision"].interval.estimate == pytest.approx(0.0)
    assert s["tgs_self"].interval.low <= 0.15 <= s["tgs_self"].interval.high
    assert s["ECE"].interval.estimate == pytest.approx(abs(0.8 - 0.5))
    assert s["AUROC"].interval.estimate == pytest.approx(0.5)
    # one tied confidence: one threshold, accepting all 6 answers, 3 of them wrong; the best
    # ordering of 3 right and 3 wrong has AURC (1/6)(1/4 + 2/5 + 3/6)
    assert s["AURC"].interval.estimate == pytest.approx(0.5)
    assert s["E_AURC"].interval.estimate == pytest.approx(0.5 - (1 / 4 + 2 / 5 + 3 / 6) / 6)
    assert s["AURC"].interval.low <= 0.5 <= s["AURC"].interval.high
    # unequal benchmark sizes: each benchmark counts equally
    two = two_stage_score("x", [1.0, 1.0, 1.0, 0.0], ["a", "a", "a", "b"], n_boot=100)
    assert two.interval.estimate == pytest.approx(0.5)
    assert share_below([0.05, 0.2, 0.1]) == pytest.approx(2 / 3)


def test_canonical_trajectory_needs_a_solution() -> None:
    with pytest.raises(InputError, match="no canonical solution"):
        good_trajectory(Problem("a", "b", "Q?", "1", "number"))


# ------------------------------------------------------------------------------ the report


def _grounding_run(run: Path) -> None:
    """A grounding run written by hand: six problems of two benchmarks with the masking curve,
    pairs on every axis, own trajectories, judge verdicts and one failed elicitation."""
    from clearsight.grounding.specs import ELICIT, JUDGE, TRAJECTORY
    from clearsight.store import Record, RunStore

    items: list[tuple[str, str, dict[str, object]]] = []
    records: list[Record] = []

    def add(kind: str, spec: dict[str, object], readouts: dict[str, object]) -> None:
        key = f"{kind}/{len(items)}"
        items.append((key, kind, spec))
        records.append(Record(key, "ok", None, {}, readouts, 0.1))

    for row in _frame().itertuples(index=False):
        r = float(str(row.variant)[6:]) if str(row.variant).startswith("self/r") else 0.0
        spec = {
            "problem": {"id": row.problem, "benchmark": row.benchmark},
            "variant": row.variant,
            "share": r,
            "meta": {},
        }
        add(ELICIT, spec, {"expected": row.expected, "probs": [1 / 11] * 11, "mass": 1.0})
    for i in range(6):
        problem = {"id": f"p{i}", "benchmark": "b1" if i < 3 else "b2"}
        for r in (0.25, 0.5, 0.75):
            spec = {"problem": problem, "variant": self_variant(r), "share": r, "meta": {}}
            add(ELICIT, spec, {"expected": 0.8 - 0.1 * r, "probs": [0.0] * 11, "mass": 1.0})
        own = {"vision": "seen", "reasoning": "so", "answer": "1"}
        readouts = {"trajectory": own, "answer": "1", "correct": i % 2 == 0}
        readouts |= {"written_confidence": None, "answer_forced": False}
        add(TRAJECTORY, {"problem": problem}, readouts)
        add(
            JUDGE,
            {"problem": problem},
            {"p_bad": 0.9 if i < 2 else 0.1, "picked_bad": i < 2, "axis": "answer"},
        )
    with RunStore.open(run) as store:
        store.begin_run({"config": {}, "protocol": "grounding"})
        store.add_items([*items, ("bad", ELICIT, {"problem": {"id": "p9"}})])
        store.write_records([*records, Record("bad", "failed", "RuntimeError: no slot", {}, {}, 0)])


def test_the_grounding_report_writes_the_shared_layout(tmp_path: Path) -> None:
    from html import unescape

    from clearsight.grounding import build_grounding_report
    from clearsight.grounding.page.report import tables

    run = tmp_path / "grounding"
    _grounding_run(run)
    paths, analysis = build_grounding_report(run, n_boot=100)
    assert (paths.html, paths.summary_md, paths.summary_csv) == (
        run / "report.html",
        run / "summary.md",
        run / "summary.csv",
    )
    assert not (run / "report").exists()
    assert analysis.n_elicitations == 6 * 6 + 6 * 3
    assert analysis.failures == {"grounding.elicit: RuntimeError: no slot": 1}
    judged = {"n": 6, "picked_bad": pytest.approx(2 / 6), "with_image": 0}  # text only
    assert analysis.judge == {"answer": judged}
    # summary.csv is the scores table, row for row as the page renders it
    csv = pd.read_csv(paths.summary_csv, keep_default_na=False, na_values=[""], dtype=str)
    pd.testing.assert_frame_equal(csv, tables(analysis))
    assert list(csv.columns) == ["score", "overall", "b1", "b2"]
    tgs_self = csv.set_index("score").loc["TGS-self"]
    assert tgs_self["overall"].startswith("+0.1500 [")
    assert tgs_self["b1"].startswith("+0.2000 [")
    assert tgs_self["b2"].startswith("+0.1000 [")
    # the headline leads page and summary with the main read-out's overall scores
    md = paths.summary_md.read_text(encoding="utf-8")
    assert next(ln for ln in md.splitlines() if ln.startswith("## ")) == "## Headline"
    overall = analysis.overall["tgs_self"].interval
    head = md.split("## Headline", 1)[1].split("Elicitations:", 1)[0]
    expected = f"{overall.estimate:+.3f} [{overall.low:+.3f}, {overall.high:+.3f}]"
    assert f"its confidence is {expected} above that with it masked" in head
    html = paths.html.read_text(encoding="utf-8")
    section = html.split("<h2>Scores</h2>", 1)[1].split("</table>", 1)[0]
    cells = [unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", section)]
    assert cells == [str(v) for row in csv.itertuples(index=False) for v in row]
    # the figures the run has data for are inlined; nothing is loaded from elsewhere
    # masking curve, Figs. 6 and 7 (one method: the run's read-out), ECE against TGS-self and
    # TGS-pair (Figs. 15, 16), risk-coverage curves
    assert html.count("src='data:image/png;base64,") == 6
    assert "risk-coverage curves" in html
    assert analysis.selective is not None
    assert len(analysis.selective.confidence) == len(analysis.selective.correct) > 0
    assert "AURC (visible self confidence gating answers)" in set(csv["score"])
    assert "no slot" in html
    assert "Judge validation" in html
    assert "Judge validation" in paths.summary_md.read_text(encoding="utf-8")


def test_only_the_tgs_scores_carry_a_sign(tmp_path: Path) -> None:
    """ECE, AUROC and AURC are never negative: printed without '+', as the TGS differences are
    printed with it, in the scores table (summary.csv), Table 2 and the headline."""
    from clearsight.grounding import build_grounding_report
    from clearsight.grounding.page.headline import grounding_headline
    from clearsight.grounding.page.tables import readouts_frame, tables

    run = tmp_path / "grounding"
    _grounding_run(run)
    _, analysis = build_grounding_report(run, n_boot=50)
    scores = tables(analysis).set_index("score")["overall"]
    unsigned = re.compile(r"\d\.\d{4} \[\d\.\d{4}, \d\.\d{4}\] \(n=")
    for label in (
        "ECE (visible self confidence; mean over benchmarks)",
        "AURC (visible self confidence gating answers)",
        "ECE pooled over items (item bootstrap)",
    ):
        assert unsigned.match(scores[label]), scores[label]
    assert scores["TGS-self"].startswith("+0.1500 [+")
    table2 = readouts_frame(analysis).iloc[0]
    assert re.match(r"\d\.\d{3} \[\d", table2["ECE"]), table2["ECE"]
    assert re.match(r"[+-]\d\.\d{3} \[[+-]", table2["tgs_self"]), table2["tgs_self"]
    frame, sentences = grounding_headline(analysis)
    head = frame.iloc[0]
    for column in ("ECE", "AUROC", "AURC"):
        assert head[column] == "–" or head[column][0].isdigit(), head[column]
    assert head["TGS-self"].startswith("+")
    assert f"ECE {head['ECE']};" in sentences[0]


def test_the_grounding_report_refuses_a_run_of_another_protocol(tmp_path: Path) -> None:
    from clearsight.grounding import build_grounding_report
    from clearsight.store import RunStore

    with RunStore.open(tmp_path / "p") as store:
        store.begin_run({"config": {}, "protocol": "probe"})
    with pytest.raises(InputError, match="is a probe run, not a grounding run"):
        build_grounding_report(tmp_path / "p")
    assert not (tmp_path / "p" / "report.html").exists()


@pytest.mark.parametrize("escape", ["../../secret.png", "link.png", "/etc/hostname"])
def test_a_benchmark_image_path_leaving_its_folder_is_refused(tmp_path: Path, escape: str) -> None:
    """A benchmark copy's (and a problem file's) image paths resolve inside its folder:
    ``..``, an absolute path elsewhere and a symbolic link out are refused by record."""
    (tmp_path / "secret.png").write_bytes(b"x")
    mv = tmp_path / "datasets" / "MathVista"
    mv.mkdir(parents=True)
    (mv / "link.png").symlink_to(tmp_path / "secret.png")
    record = {"pid": "7", "question": "How many?", "answer": "12", "image": escape}
    (mv / "testmini.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError, match=r"MathVista record 0: its image .* leaves "):
        load_benchmark("MathVista", tmp_path / "datasets")
    own = mv / "own.jsonl"
    own.write_text(json.dumps({"id": 1, "question": "Is it?", "answer": "yes", "image": escape}))
    with pytest.raises(InputError, match=r"own record 0: its image .* leaves "):
        load_jsonl(own)
