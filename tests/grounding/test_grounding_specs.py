"""Grounding items as typed specs: the JSON they store (the same as before specs were typed),
their keys (the one recipe), and units of typed specs run without a model."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from clearsight.grounding.config import GroundingConfig
from clearsight.grounding.plan import plan_edits, plan_elicitations, plan_judge, plan_trajectories
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.protocol import _stages
from clearsight.grounding.specs import (
    EDIT,
    ELICIT,
    JUDGE,
    TRAJECTORY,
    EditSpec,
    ElicitSpec,
    JudgeSpec,
    TrajectorySpec,
)
from clearsight.grounding.trajectories.trajectory import default_template
from clearsight.grounding.unit import GroundingUnit, run_unit
from clearsight.seeding import content_hash, derive_seed
from clearsight.specs import Spec, json_key, spec_class
from clearsight.store import RunStore, compact_json

SOLUTION = {"observation": "Two and two.", "reasoning": "2 + 2 = 4.", "answer": "4"}
PROBLEM = Problem("p1", "bench", "2 + 2?", "4", "number", solution=SOLUTION)
PROBLEM_JSON = {
    "id": "p1",
    "benchmark": "bench",
    "question": "2 + 2?",
    "gold": "4",
    "answer_type": "number",
    "image": None,
    "options": [],
    "solution": SOLUTION,
    "meta": None,
}
GIVEN = "Observation: two and two.\nReasoning: 2 + 2 = 4.\nAnswer: 4\nConfidence (0-10): 9"
CONFIG = GroundingConfig(
    model="hf:m",
    generator="hf:g",
    judge="hf:j",
    n_problems=0,
    seed=5,
    max_new_tokens=96,  # the stored form of runs made when 96 was the default
    variation_mode="handwritten",
)
OWN = {"p1": {"trajectory": {"vision": "I see 2 and 2.", "reasoning": "2 + 2 = 4.", "answer": "4"}}}


def _template() -> dict[str, str]:
    return {"id": default_template().id, "hash": default_template().hash}


def _same_stored_text(spec: Spec, expected: dict[str, Any]) -> bool:
    """The store writes key order as it is: compare the stored text, not only the dicts."""
    return compact_json(spec.to_json()) == compact_json(expected)


def _plan(problems: list[Problem], edits: dict[tuple[str, str], str]) -> list[Spec]:
    return [
        *plan_trajectories(CONFIG, problems),
        *plan_edits(CONFIG, problems),
        *plan_judge(CONFIG, problems, edits),
        *plan_elicitations(CONFIG, problems, OWN, edits),
    ]


def test_a_problem_stores_its_fields_with_no_solution_or_meta_as_none() -> None:
    p = Problem("m", "b", "Pick\nA. x\nB. y", "B", "letter", options=("x", "y"), meta={})
    assert p.solution is None
    assert p.meta is None
    assert p == Problem("m", "b", "Pick\nA. x\nB. y", "B", "letter", options=("x", "y"))
    expected = {
        **PROBLEM_JSON,
        "id": "m",
        "benchmark": "b",
        "question": "Pick\nA. x\nB. y",
        "gold": "B",
        "answer_type": "letter",
        "options": ["x", "y"],
        "solution": None,
    }
    assert compact_json(p.to_json()) == compact_json(expected)
    assert compact_json(PROBLEM.to_json()) == compact_json(PROBLEM_JSON)


def test_a_trajectory_item_stores_what_it_stored_before() -> None:
    own, given = plan_trajectories(
        CONFIG, [PROBLEM, Problem("g", "b", "Q?", "4", "number", meta={"trajectory": GIVEN})]
    )
    expected = {
        "problem": PROBLEM_JSON,
        "model": "hf:m",
        "model_options": {"batch_size": 16},
        "template": _template(),
        "max_new_tokens": 96,
    }
    assert _same_stored_text(own, expected)  # no "given" key while there is none
    assert given.given == GIVEN
    assert list(given.to_json()) == [*expected, "given"]
    assert given.to_json()["given"] == GIVEN


def test_an_edit_item_stores_what_it_stored_before() -> None:
    vision, reasoning = plan_edits(CONFIG, [PROBLEM])
    assert _same_stored_text(
        vision,
        {
            "problem_id": "p1",
            "axis": "vision",
            "span": "Two and two.",
            "generator": "hf:g",
            "generator_options": {"batch_size": 16},
            "seed": derive_seed(5, "p1", "vision"),
        },
    )
    assert (reasoning.axis, reasoning.span) == ("reasoning", "2 + 2 = 4.")
    (rule_only, _) = plan_edits(CONFIG.model_copy(update={"generator": None}), [PROBLEM])
    assert rule_only.to_json()["generator"] is None  # stored as null, not left out
    assert rule_only.to_json()["generator_options"] == {}


def test_a_judge_item_stores_what_it_stored_before() -> None:
    (answer,) = plan_judge(CONFIG, [PROBLEM], {})
    good = {"vision": "Two and two.", "reasoning": "2 + 2 = 4.", "answer": "4"}
    assert _same_stored_text(
        answer,
        {
            "problem": PROBLEM_JSON,
            "axis": "answer",
            "good": good,
            "bad": {**good, "answer": answer.bad.answer},
            "bad_first": derive_seed(5, "p1", "answer", "judge") % 2 == 0,
            "judge": "hf:j",
        },
    )
    assert answer.bad.answer != "4"
    assert plan_judge(CONFIG.model_copy(update={"judge": None}), [PROBLEM], {}) == []
    edited = plan_judge(CONFIG, [PROBLEM], {("p1", "vision"): "Three and two."})
    assert [(j.axis, j.bad.vision) for j in edited if j.axis != "answer"] == [
        ("vision", "Three and two.")
    ]


def test_an_elicitation_item_stores_what_it_stored_before() -> None:
    plan = plan_elicitations(CONFIG, [PROBLEM], OWN, {})
    by_variant = {s.variant: s for s in plan}
    own = OWN["p1"]["trajectory"]
    assert _same_stored_text(
        by_variant["self/r0.50"],
        {
            "problem": PROBLEM_JSON,
            "variant": "self/r0.50",
            "trajectory": own,
            "share": 0.5,
            "seed": derive_seed(5, "p1", "self/r0.50"),
            "model": "hf:m",
            "model_options": {"batch_size": 16},
            "template": _template(),
            "meta": {},
        },
    )
    answer_bad = by_variant["bench/answer/bad"].to_json()
    assert answer_bad["meta"]["rule"]
    assert answer_bad["share"] == 0.0
    assert set(by_variant) >= {"self/r0.00", "self/r1.00", "bench/good", "variation/answer/alt"}


def test_items_share_their_problem_and_its_json() -> None:
    plan = plan_elicitations(CONFIG, [PROBLEM], OWN, {})
    assert all(s.problem is PROBLEM for s in plan)
    assert plan[0].to_json()["problem"] is plan[1].to_json()["problem"]  # computed once


def test_keys_follow_the_one_recipe_and_are_stable_and_distinct() -> None:
    problems = [PROBLEM, *bundled_problems(6, seed=1)]
    edits = {(p.id, "vision"): "edited " + p.id for p in problems}
    plan = _plan(problems, edits)
    assert {s.kind for s in plan} == {TRAJECTORY, EDIT, JUDGE, ELICIT}
    for spec in plan:
        stored = json.loads(compact_json(spec.to_json()))  # as the store reads it back
        assert spec.key == json_key(spec.kind, stored)
        assert spec.key != content_hash(stored)  # the key names the kind: not the old recipe
        assert spec_class(spec.kind) is type(spec)
    keys = [s.key for s in plan]
    assert len(set(keys)) == len(keys)
    assert [s.key for s in _plan(problems, edits)] == keys  # planned again: the same keys
    longer = plan_trajectories(CONFIG.model_copy(update={"max_new_tokens": 97}), problems)
    assert not {s.key for s in longer} & set(keys)


def test_the_spec_classes_are_the_item_kinds() -> None:
    kinds = {TrajectorySpec: TRAJECTORY, EditSpec: EDIT, JudgeSpec: JUDGE, ElicitSpec: ELICIT}
    assert {cls: cls.kind for cls in kinds} == kinds


def test_units_of_given_trajectories_and_rule_edits_run_without_a_model() -> None:
    bad = "Observation: x.\nAnswer: 4"  # no confidence slot
    problems = [
        Problem("fine", "b", "Q?", "4", "number", meta={"trajectory": GIVEN}),
        Problem("bad", "b", "Q?", "4", "number", meta={"trajectory": bad}),
    ]
    items = plan_trajectories(CONFIG, problems)
    unit = pickle.loads(pickle.dumps(GroundingUnit(TRAJECTORY, "hf:m", {}, tuple(items))))
    assert unit.items == tuple(items)
    assert unit.keys == tuple(s.key for s in items)
    fine, failed = run_unit(unit)
    assert (fine.key, failed.key) == unit.keys
    assert fine.status == "ok"
    assert fine.readouts["written_confidence"] == 9
    assert fine.readouts["trajectory"] == {
        "vision": "two and two.",
        "reasoning": "2 + 2 = 4.",
        "answer": "4",
    }
    assert failed.status == "failed"
    assert "no confidence slot" in (failed.error or "")

    edits = plan_edits(CONFIG.model_copy(update={"generator": None}), [PROBLEM])
    records = run_unit(GroundingUnit(EDIT, "hf:m", {}, tuple(edits)))
    assert [r.key for r in records] == [s.key for s in edits]
    vision, reasoning = records
    assert vision.status == "failed"  # no number to change, no verb to negate
    assert "no rule can inject a vision error" in (vision.error or "")
    assert reasoning.status == "ok"
    assert reasoning.raw["injector"] == "rule"
    assert reasoning.readouts["edited"] == reasoning.raw["edited"] != edits[1].span


def test_elicitations_are_planned_from_the_stored_trajectories(tmp_path: Path) -> None:
    cfg = CONFIG.model_copy(update={"pairs": False, "variation": False, "judge": None})
    problems = [Problem("g", "b", "Q?", "4", "number", meta={"trajectory": GIVEN})]
    with RunStore.open(tmp_path / "run") as store:
        store.begin_run({"config": {}, "protocol": "grounding"})
        stages = _stages(cfg, problems, store)
        first = next(stages)
        assert first.kind == TRAJECTORY
        store.add_items((s.key, s.kind, s.to_json()) for s in first.items)
        for unit in first.units(first.items):
            store.write_records(first.run_unit(unit))
        last = next(stages)
        assert last.kind == ELICIT
        assert [s.variant for s in last.items] == [f"self/r{r:.2f}" for r in cfg.mask_ratios]
        assert {s.trajectory.answer for s in last.items} == {"4"}
        assert all(isinstance(s, ElicitSpec) and s.problem is problems[0] for s in last.items)
        with pytest.raises(StopIteration):
            next(stages)
