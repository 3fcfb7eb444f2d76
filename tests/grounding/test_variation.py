"""Sampled content variation: the answer rules of alternatives, reproducible seeded samples
stored and reused by a rerun, the per-alternative JSD against the original, one forward pass
per alternative."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")

from test_grounding_model import Calls, one_thread  # noqa: F401  (one thread: faster)

from clearsight.grounding.confidence.elicit import elicit
from clearsight.grounding.confidence.methods import get_readout, readout_requests
from clearsight.grounding.config import GroundingConfig
from clearsight.grounding.plan import plan_elicitations, plan_variations
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.trajectories.trajectory import Trajectory
from clearsight.grounding.variation import (
    axis_prefix,
    jsd_per_item,
    sample_alternatives,
    sample_requests,
    sampled_alternative,
    share_below,
    variation_variant,
)
from clearsight.metrics.divergence import jsd_bits
from clearsight.models.hf import make_hf
from clearsight.validate import InputError

PROBLEM = Problem(id="p1", benchmark="b", question="What is 2 + 3?", answer_type="number", gold="5")
OWN = Trajectory("The numbers are 2 and 3.", "2 + 3 = 5.", "5")
CONFIG = GroundingConfig(model="hf:m", generator=None, n_problems=0, seed=3, variation_samples=2)


def test_axis_prefixes_cut_the_own_trajectory_at_the_axis_tag() -> None:
    assert axis_prefix(OWN, "vision") == "Observation:"
    assert axis_prefix(OWN, "reasoning") == "Observation: The numbers are 2 and 3.\nReasoning:"
    assert axis_prefix(OWN, "answer").endswith("Reasoning: 2 + 3 = 5.\nAnswer:")
    with pytest.raises(InputError, match="unknown axis"):
        axis_prefix(OWN, "colour")


def test_vision_and_reasoning_alternatives_keep_the_answer() -> None:
    alt = sampled_alternative(
        PROBLEM, OWN, "vision", " Two and three are given.\nReasoning: 3 + 2 = 5.\nAnswer: 5"
    )
    assert alt == Trajectory("Two and three are given.", OWN.reasoning, "5")  # others copied
    alt = sampled_alternative(PROBLEM, OWN, "reasoning", " Add them: 5.\nAnswer: 5.0\nConf")
    assert alt == Trajectory(OWN.vision, "Add them: 5.", "5")
    with pytest.raises(InputError, match=r"changes the answer \('5' -> '6'\)"):
        sampled_alternative(PROBLEM, OWN, "reasoning", " 2 + 3 = 6.\nAnswer: 6")
    with pytest.raises(InputError, match="is the original text"):
        sampled_alternative(PROBLEM, OWN, "reasoning", " 2 + 3 = 5.\nAnswer: 5")
    with pytest.raises(InputError, match="states no final answer"):
        sampled_alternative(PROBLEM, OWN, "vision", "")


def test_answer_alternatives_replace_the_answer() -> None:
    alt = sampled_alternative(PROBLEM, OWN, "answer", " 7\nConfidence (0-10): 9")
    assert alt == Trajectory(OWN.vision, OWN.reasoning, "7")
    with pytest.raises(InputError, match="does not replace"):
        sampled_alternative(PROBLEM, OWN, "answer", " 5.0")


def test_samples_are_seeded_per_problem_axis_and_k() -> None:
    own = {"p1": {"trajectory": OWN.to_json()}}
    plan = plan_variations(CONFIG, [PROBLEM], own)
    assert [(s.axis, s.sample) for s in plan] == [
        (a, k) for a in ("vision", "reasoning", "answer") for k in (0, 1)
    ]
    assert len({s.seed for s in plan}) == 6
    assert [s.seed for s in plan_variations(CONFIG, [PROBLEM], own)] == [s.seed for s in plan]
    reqs = sample_requests(plan, [None] * len(plan))
    assert {r.decoding.temperature for r in reqs} == {1.0}
    # vision / reasoning: the hf backend's default trajectory length; answer: one line
    assert [r.decoding.max_new_tokens for r in reqs] == [1024] * 4 + [16] * 2
    assert [r.decoding.seed for r in reqs] == [s.seed for s in plan]
    hand = CONFIG.model_copy(update={"variation_mode": "handwritten"})
    assert plan_variations(hand, [PROBLEM], own) == []


def test_only_stored_alternatives_are_scored_against_the_own_trajectory() -> None:
    own = {"p1": {"trajectory": OWN.to_json()}}
    alts = {("p1", "vision", 1): Trajectory("2, 3.", OWN.reasoning, "5")}
    cfg = CONFIG.model_copy(update={"readouts": ("verbalize", "vlcal"), "hesitation": False})
    plan = plan_elicitations(cfg, [PROBLEM], own, {}, alts)
    variants = [(s.variant, s.readout.name if s.readout else "verbalize") for s in plan]
    assert (variation_variant("vision", 1), "verbalize") in variants
    assert (variation_variant("vision", 1), "vlcal") in variants
    assert not any(v.startswith("variation/") and "/s0" in v for v, _ in variants)
    assert len(plan) == 2 * (len(cfg.mask_ratios) + 1)


def test_jsd_is_per_alternative_against_the_original_and_averaged_over_slots() -> None:
    p, q, r = [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [1.0, 0.0, 0.0]
    rows = [
        {"problem": "a", "variant": "self/r0.00", "probs": p, "distributions": {"v": p, "r": p}},
        {"problem": "a", "variant": "variation/vision/s0", "probs": q,
         "distributions": {"v": q, "r": p}},
        {"problem": "a", "variant": "variation/vision/s1", "probs": p,
         "distributions": {"v": p, "r": p}},
        {"problem": "b", "variant": "variation/vision/s0", "probs": r,
         "distributions": {"v": r, "r": r}},  # no original: not counted
        {"problem": "a", "variant": "bench/good", "probs": r, "distributions": {"v": r, "r": r}},
        {"problem": "a", "variant": "variation/vision/alt", "probs": r,
         "distributions": {"v": r, "r": r}},
    ]  # fmt: skip
    j = jsd_per_item(pd.DataFrame(rows), "vision")
    expected = [jsd_bits(p, q) / 2, 0.0, 0.0]  # the hand-written alt against bench/good
    assert j == pytest.approx(expected, abs=1e-12)
    assert jsd_bits(p, q) / 2 > 0.1
    assert share_below(j) == pytest.approx(2 / 3)
    assert jsd_per_item(pd.DataFrame(rows), "answer").size == 0


def test_sampled_alternatives_are_reproducible_and_cost_one_pass_each(
    tiny_llama_path: Path,
) -> None:
    backend = make_hf(str(tiny_llama_path), {"batch_size": 8})
    problem = bundled_problems(1)[0]
    own = {problem.id: {"trajectory": OWN.to_json()}}
    plan = plan_variations(CONFIG.model_copy(update={"max_new_tokens": 12}), [problem], own)
    first = sample_alternatives(backend, plan, [None] * len(plan))
    again = sample_alternatives(backend, plan[::-1], [None] * len(plan))[::-1]
    assert [t for t, *_ in first] == [t for t, *_ in again]  # seeded per spec, not batch
    assert len({t for t, *_ in first}) > 1
    for spec, (text, _, forced, _) in zip(plan, first, strict=True):
        # 12 tokens rarely reach an answer: those are continued from the answer tag
        assert not forced or (spec.axis != "answer" and "\nAnswer:" in text)
    assert any(f for _, _, f, _ in first)
    verbalize = get_readout("verbalize")
    reqs = [readout_requests(verbalize, problem, OWN, 0.0, k)[0] for k in range(5)]
    calls = Calls(backend.model)
    elicit(backend, reqs, batch_size=1)
    assert calls.n == 5  # one forward pass per alternative


def test_a_sampled_run_stores_its_alternatives_and_a_rerun_reuses_them(
    tiny_llama_path: Path, tmp_path: Path
) -> None:
    from clearsight.grounding import build_grounding_report
    from clearsight.grounding.protocol import run_grounding
    from clearsight.grounding.specs import ELICIT, VARIATION
    from clearsight.store import RunStore

    cfg = GroundingConfig(
        model=f"hf:{tiny_llama_path}",
        generator=None,
        n_problems=2,
        max_new_tokens=10,
        pairs=False,
        hesitation=False,
        variation_samples=3,
        n_boot=100,
    )
    first = run_grounding(cfg, tmp_path / "run", progress=False)
    v = first.stages[VARIATION]
    assert v.ok + v.failed == 2 * 3 * 3
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        stored = {r.key: r for r in store.iter_records(kind=VARIATION)}
    assert v.failed == 0  # a rejected sample is a stored outcome, not a failure to retry
    assert all(r.raw and "text" in r.raw for r in stored.values())  # rejected ones too
    accepted = [r for r in stored.values() if r.readouts["accepted"]]
    assert all(r.readouts["reason"] for r in stored.values() if not r.readouts["accepted"])
    n_elicit = first.stages[ELICIT].ok + first.stages[ELICIT].failed
    assert n_elicit == 2 * len(cfg.mask_ratios) + len(accepted)
    again = run_grounding(cfg, tmp_path / "run", progress=False)
    assert again.stages[VARIATION].units == 0
    assert again.stages[ELICIT].units == 0
    _, analysis = build_grounding_report(tmp_path / "run", n_boot=100)
    n = sum(analysis.variation[a].n for a in ("vision", "reasoning", "answer"))
    assert n == len(accepted)
    sampling = analysis.variation_sampling
    assert sum(s.sampled for s in sampling.values()) == 18
    assert sum(s.accepted for s in sampling.values()) == len(accepted)
    rejected = sum(sum(s.reasons.values()) for s in sampling.values())
    assert rejected == 18 - len(accepted)
    for a in ("vision", "reasoning", "answer"):
        share = analysis.variation[a].share
        assert math.isnan(share) or 0.0 <= share <= 1.0
    assert np.all(np.asarray(analysis.variation["answer"].jsd) >= 0.0)
