"""Planning a grounding run: its problems, then each stage's items from the configuration and
the records of the stages before (planning only; :mod:`clearsight.grounding.unit` runs them).

* :func:`plan_trajectories` — one own trajectory per problem (or the one it brings);
* :func:`plan_edits` — a vision and a reasoning error per problem with a canonical solution;
* :func:`plan_judge` — one judge item per TGS-Bench pair;
* :func:`plan_variations` — K sampled alternatives per axis of each own trajectory;
* :func:`plan_elicitations` — every confidence read-out: the masking curve, hesitation events,
  sampled or hand-written variation and the TGS-Bench pairs, each under every read-out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from clearsight.grounding.bench.file import load_bench
from clearsight.grounding.bench.pairs import AXES, bad_trajectory, perturb_answer
from clearsight.grounding.bench.use import bench_problems
from clearsight.grounding.confidence.methods import DEFAULT_READOUT, get_readout
from clearsight.grounding.config import GroundingConfig
from clearsight.grounding.hesitation import find_hesitations, hesitation_variant
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.problems.hub import load_benchmark
from clearsight.grounding.problems.problem import Problem, load_jsonl
from clearsight.grounding.specs import (
    EditSpec,
    ElicitSpec,
    JudgeSpec,
    ReadoutRef,
    TemplateRef,
    TrajectorySpec,
    VariationSpec,
    template_ref,
)
from clearsight.grounding.tgs import bench_variant, self_variant
from clearsight.grounding.trajectories.trajectory import Trajectory, good_trajectory
from clearsight.grounding.trajectories.written import trajectory_from_json
from clearsight.grounding.variation import (
    ANSWER_TOKENS,
    TEMPERATURE,
    TOP_P,
    alternative,
    variation_variant,
)
from clearsight.seeding import derive_seed, rng_for
from clearsight.validate import InputError, refuse_repeated_ids


def load_problems(config: GroundingConfig) -> list[Problem]:
    """The run's problems: bundled ones, then loaded benchmarks and JSONL files; ids unique
    (a repeated one is an InputError naming it and both sources). A named source that holds
    no problems, or a run left with none, is an InputError: never an empty run or bench."""
    sources = [
        ("the bundled problems", bundled_problems(config.n_problems, config.families, config.seed))
    ]
    for name in config.benchmarks:
        if config.datasets_dir is None:
            raise InputError("benchmarks given without datasets_dir")
        loaded = load_benchmark(name, config.datasets_dir, config.limit)
        sources.append((f"benchmark {name}", loaded))
    for path in config.jsonl:
        sources.append((str(path), load_jsonl(path)[: config.limit]))
    if config.bench is not None:
        sources.append((str(config.bench), bench_problems(load_bench(config.bench))))
    for where, problems in sources[1:]:
        if not problems:
            raise InputError(f"no problems in {where}: it holds no rows")
    refuse_repeated_ids(((p.id, where) for where, ps in sources for p in ps), "problem")
    problems = [p for _, ps in sources for p in ps]
    if not problems:
        raise InputError("no problems: give --n N (bundled problems) or a source of them")
    return problems


def plan_trajectories(config: GroundingConfig, problems: Sequence[Problem]) -> list[TrajectorySpec]:
    """Stage 1 items: one own trajectory per problem (or the given one), in the run's
    template for the model (:meth:`GroundingConfig.template`)."""
    ref, tokens = template_ref(config.template().template), config.trajectory_tokens()
    return [
        TrajectorySpec(
            problem=p,
            model=config.model,
            model_options=config.options_of(config.model),
            template=ref,
            max_new_tokens=tokens,
            given=str(p.meta["trajectory"]) if p.meta and "trajectory" in p.meta else None,
        )
        for p in problems
    ]


def plan_edits(config: GroundingConfig, problems: Sequence[Problem]) -> list[EditSpec]:
    """Stage 2 items: a vision and a reasoning error per problem with a canonical solution."""
    items = []
    for p in problems:
        if not p.solution:
            continue
        good = good_trajectory(p)
        for axis, span in (("vision", good.vision), ("reasoning", good.reasoning)):
            items.append(
                EditSpec(
                    problem_id=p.id,
                    axis=axis,
                    span=span,
                    generator=config.generator,
                    generator_options=config.options_of(config.generator),
                    seed=derive_seed(config.seed, p.id, axis),
                )
            )
    return items


def _bad_sides(
    config: GroundingConfig, p: Problem, good: Trajectory, edits: dict[tuple[str, str], str]
) -> Iterator[tuple[str, Trajectory, dict[str, str]]]:
    """The TGS-Bench pairs of a problem with a solution: per axis with a bad trajectory, the
    axis, that trajectory and what made it (the answer rule)."""
    for axis in AXES:
        try:
            if (p.id, axis) in edits:  # made by the edit stage or given by a TGS-Bench file
                text, meta = edits[(p.id, axis)], {}
            elif axis == "answer":
                rng = rng_for("grounding.bench.answer", config.seed, p.id)
                text, rule = perturb_answer(good.answer, p, rng)
                meta = {"rule": rule}
            else:
                continue
        except InputError:
            continue
        yield axis, bad_trajectory(good, axis, text), meta


def plan_judge(
    config: GroundingConfig, problems: Sequence[Problem], edits: dict[tuple[str, str], str]
) -> list[JudgeSpec]:
    """One judge item per TGS-Bench pair (the bad side's position balanced by seed); none
    without a judge."""
    if config.judge is None:
        return []
    items = []
    for p in problems:
        if not p.solution:
            continue
        good = good_trajectory(p)
        for axis, bad, _ in _bad_sides(config, p, good, edits):
            items.append(
                JudgeSpec(
                    problem=p,
                    axis=axis,
                    good=good,
                    bad=bad,
                    bad_first=derive_seed(config.seed, p.id, axis, "judge") % 2 == 0,
                    judge=config.judge,
                )
            )
    return items


def plan_variations(
    config: GroundingConfig, problems: Sequence[Problem], own: dict[str, dict[str, Any]]
) -> list[VariationSpec]:
    """Sampled content variation: K alternatives per axis of each own trajectory, seeded per
    problem, axis and k (none in hand-written mode)."""
    if not config.variation or config.variation_mode != "sampled":
        return []
    items = []
    ref, tokens = template_ref(config.template().template), config.trajectory_tokens()
    for p in problems:
        if p.id not in own:
            continue
        traj = trajectory_from_json(own[p.id]["trajectory"])
        for axis in AXES:
            for k in range(config.variation_samples):
                items.append(
                    VariationSpec(
                        problem=p,
                        axis=axis,
                        sample=k,
                        trajectory=traj,
                        model=config.model,
                        model_options=config.options_of(config.model),
                        template=ref,
                        max_new_tokens=tokens,
                        answer_tokens=ANSWER_TOKENS,
                        temperature=TEMPERATURE,
                        top_p=TOP_P,
                        seed=derive_seed(config.seed, p.id, axis, k, "variation"),
                    )
                )
    return items


def _readout_refs(config: GroundingConfig) -> list[ReadoutRef | None]:
    """The run's read-outs as spec fields (``verbalize``: None, the key it always had)."""
    out: list[ReadoutRef | None] = []
    for name in config.readouts:
        r = get_readout(name)
        out.append(None if name == DEFAULT_READOUT else ReadoutRef(name, r.hash))
    return out


def _elicit_spec(
    config: GroundingConfig,
    template: TemplateRef,
    p: Problem,
    variant: str,
    traj: Trajectory,
    share: float,
    meta: dict[str, str],
) -> Iterator[ElicitSpec]:
    """The item of ``variant`` under each of the run's read-outs (one masked subset: the
    seed does not depend on the read-out), laid out by ``template``."""
    for ref in _readout_refs(config):
        yield ElicitSpec(
            problem=p,
            variant=variant,
            trajectory=traj,
            share=share,
            seed=derive_seed(config.seed, p.id, variant),
            model=config.model,
            model_options=config.options_of(config.model),
            template=template,
            meta=meta,
            readout=ref,
        )


def plan_elicitations(
    config: GroundingConfig,
    problems: Sequence[Problem],
    own: dict[str, dict[str, Any]],
    edits: dict[tuple[str, str], str],
    alternatives: Mapping[tuple[str, str, int], Trajectory] | None = None,
) -> list[ElicitSpec]:
    """Elicitation items from the own trajectories (``own[problem id]`` = the read-outs of its
    stored trajectory record), the edits (``edits[(problem id, axis)]`` = edited span) and the
    sampled alternatives (``alternatives[(problem id, axis, k)]``), each under every read-out."""
    items: list[ElicitSpec] = []
    sampled = config.variation and config.variation_mode == "sampled"
    spec = partial(_elicit_spec, config, template_ref(config.template().template))

    for p in problems:
        if p.id in own:
            traj = trajectory_from_json(own[p.id]["trajectory"])
            for r in config.mask_ratios:
                items += spec(p, self_variant(r), traj, r, {})
            events = find_hesitations(traj) if config.hesitation else []
            for k, hes in enumerate(events):
                for side, t in (("pre", hes.pre), ("post", hes.post)):
                    variant = hesitation_variant(k, side)
                    items += spec(p, variant, t, 0.0, {"marker": hes.marker})
            for axis in AXES if sampled else ():
                for k in range(config.variation_samples):
                    if (alt := (alternatives or {}).get((p.id, axis, k))) is not None:
                        items += spec(p, variation_variant(axis, k), alt, 0.0, {})
        if not p.solution:
            continue
        good = good_trajectory(p)
        if config.pairs:
            items += spec(p, bench_variant(None), good, 0.0, {})
            for axis, bad, meta in _bad_sides(config, p, good, edits):
                items += spec(p, bench_variant(axis), bad, 0.0, meta)
        if config.variation and not sampled:
            for axis in AXES:
                try:
                    alt = alternative(p, axis)
                except InputError:
                    continue
                items += spec(p, variation_variant(axis), alt, 0.0, {})
    return items
