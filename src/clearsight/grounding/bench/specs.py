"""TGS-Bench build items (:mod:`clearsight.grounding.bench.protocol`): the four stages' kinds and
typed
specs, and the build's prompts (``data/tgs_bench.yaml``: the generator's template, the judge's
acceptance question)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import ClassVar

import yaml
from pydantic import JsonValue

from clearsight.grounding.bench.readouts import (
    CheckReadouts,
    GoodReadouts,
    PairEditReadouts,
    ValidateReadouts,
)
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.specs import TemplateRef
from clearsight.grounding.trajectories.trajectory import Template, Trajectory, default_template
from clearsight.models.base import Message, Request
from clearsight.specs import OMIT_NONE, Spec

GOOD = "tgs_bench.good"
CHECK = "tgs_bench.check"
EDIT = "tgs_bench.edit"
VALIDATE = "tgs_bench.validate"


# --------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def prompts() -> dict[str, str]:
    """The build's prompts, ``data/tgs_bench.yaml``."""
    text = files("clearsight.grounding").joinpath("data/tgs_bench.yaml").read_text()
    doc: dict[str, str] = yaml.safe_load(text)
    return doc


@lru_cache(maxsize=1)
def generator_template() -> Template:
    """The trajectory template with the generator prompt as its user turn (the same tags)."""
    doc = prompts()
    return dataclasses.replace(default_template(), id=doc["id"], user=doc["generator"])


def generator_ref() -> TemplateRef:
    """The generator template by id and hash (an edited prompt makes new items)."""
    t = generator_template()
    return TemplateRef(t.id, t.hash)


def accept_request(problem: Problem, trajectory: Trajectory) -> Request:
    """The judge's request: is this trajectory correct? Candidates "Yes" and "No"."""
    text, _ = trajectory.render()
    solution = text.rsplit("\n", 1)[0]  # without the confidence slot
    prompt = prompts()["judge_accept"].replace("{question}", problem.question)
    prompt = prompt.replace("{solution}", solution)
    return Request((Message.user(prompt),), candidates=("Yes", "No"), generate=False)


# --------------------------------------------------------------------------------------------
# Items
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoodSpec(Spec):
    """The generator's trajectory for a problem (stage 1)."""

    kind: ClassVar[str] = GOOD
    readout_type = GoodReadouts

    problem: Problem
    generator: str
    generator_options: Mapping[str, JsonValue]
    template: TemplateRef
    max_new_tokens: int


@dataclass(frozen=True)
class CheckSpec(Spec):
    """The answer check of a generated trajectory, and the judge's acceptance (stage 2)."""

    kind: ClassVar[str] = CHECK
    readout_type = CheckReadouts

    problem: Problem
    trajectory: Trajectory
    judge: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    judge_options: Mapping[str, JsonValue] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class PairEditSpec(Spec):
    """The one error on ``axis`` of a kept good trajectory (stage 3)."""

    kind: ClassVar[str] = EDIT
    readout_type = PairEditReadouts

    problem: Problem
    axis: str
    good: Trajectory
    generator: str
    generator_options: Mapping[str, JsonValue]
    seed: int


@dataclass(frozen=True)
class ValidateSpec(Spec):
    """The validation of one assembled pair (stage 4)."""

    kind: ClassVar[str] = VALIDATE
    readout_type = ValidateReadouts

    problem: Problem
    axis: str
    good: Trajectory
    bad: Trajectory
    bad_first: bool
    """Where the judge is shown the bad side (balanced by seed)."""
    judge: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    judge_options: Mapping[str, JsonValue] = dataclasses.field(default_factory=dict)
