"""The probe's item specs: what each kind of item is made of, typed (see :mod:`clearsight.specs`).

Kind ``probe`` is one conversation. A probe run plans two shapes of it — the VLM-direct
baseline (:class:`DirectSpec`) and a model reasoner's conversation (:class:`ConversationSpec`),
both holding the instance itself and everything that determines the transcript — while a
transcript stored without a planned spec (a person's session at ``clearsight serve``, say) is
keyed by its identifying fields (:class:`TranscriptSpec`). All three are :class:`ProbeSpec`, the
class registered for the kind. The post-hoc analyses (:class:`BeliefSpec`,
:class:`QueryTypeSpec`) name the transcript they analyse by its key, and build stage 1
(:class:`BuildSpec`) one question sampled from one sensor; a judge validated against people's
labels of u is :class:`JudgeValidationSpec`, the query-type judge validated against people's
labels of query types :class:`QueryTypeValidationSpec`.

The JSON forms are the specs these items were always stored under, so their keys are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal, get_args

from pydantic import JsonValue

from clearsight.probe.instances import Instance
from clearsight.probe.readouts import (
    BeliefReadouts,
    BuildReadouts,
    ConversationReadouts,
    JudgeValidationReadouts,
    QueryTypeReadouts,
    QueryTypeValidationReadouts,
)
from clearsight.specs import OMIT_NONE, Spec
from clearsight.validate import InputError

__all__ = [
    "BELIEF_PROTOCOL",
    "BUILD_PROTOCOL",
    "JUDGE_VALIDATION_PROTOCOL",
    "PROTOCOL",
    "QTYPE_PROTOCOL",
    "QTYPE_VALIDATION_PROTOCOL",
    "SIGNALS",
    "AnalysisSpec",
    "BeliefSpec",
    "BuildSpec",
    "ConversationSpec",
    "DirectSpec",
    "JudgeValidationSpec",
    "PlannedSpec",
    "ProbeSpec",
    "QueryTypeSpec",
    "QueryTypeValidationSpec",
    "Signal",
    "TranscriptSpec",
]

#: The item kinds: a conversation, its two post-hoc analyses, a build stage-1 question, the
#: judges' validations against people's labels (of u, of query types).
PROTOCOL: Final = "probe"
BELIEF_PROTOCOL: Final = "probe.belief"
QTYPE_PROTOCOL: Final = "probe.qtype"
BUILD_PROTOCOL: Final = "probe.build"
JUDGE_VALIDATION_PROTOCOL: Final = "probe.judges"
QTYPE_VALIDATION_PROTOCOL: Final = "probe.qtype-judges"

#: The consistency signal shown to a reasoner: the true u, none, or a random one (the ablation).
Signal = Literal["true", "none", "random"]
#: The signals, in that order.
SIGNALS: Final[tuple[str, ...]] = get_args(Signal)


@dataclass(frozen=True, kw_only=True)
class ProbeSpec(Spec):
    """A probe item: one conversation of a reasoner with the sensor about one instance (the
    fields every probe item has; the subclasses are its shapes)."""

    kind: ClassVar[str] = PROTOCOL
    readout_type = ConversationReadouts

    sensor: str
    strategy: str
    reasoner: str
    """A model spec, ``vlm`` (the sensor answers directly) or ``human:<name>``."""
    k: int
    """K, sensor samples per query."""
    signal: str
    """The consistency shown to the reasoner: ``true`` u, ``none`` or ``random``."""
    run: int


@dataclass(frozen=True, kw_only=True)
class PlannedSpec(ProbeSpec):
    """A conversation a probe run plans: the instance itself and how the sensor samples."""

    instance: Instance
    sensor_options: Mapping[str, JsonValue] = field(default_factory=dict)
    sensor_max_new_tokens: int
    temperature: float
    """The decoding temperature of both models."""
    seed: int
    """The run seed."""
    prompt: str
    """The content hash of the strategy's prompt (a changed prompt is a new item)."""


@dataclass(frozen=True, kw_only=True)
class DirectSpec(PlannedSpec):
    """The VLM-direct baseline: the sensor answers the multiple-choice question itself, one
    sample, no reasoner and no signal."""

    strategy: str = field(default="direct", init=False)
    reasoner: str = field(default="vlm", init=False)
    k: int = field(default=1, init=False)
    signal: str = field(default="none", init=False)


@dataclass(frozen=True, kw_only=True)
class ConversationSpec(PlannedSpec):
    """A model reasoner's conversation with the sensor (strategy react, uot or bp)."""

    signal: Signal
    reasoner_options: Mapping[str, JsonValue] = field(default_factory=dict)
    judge: str
    """The semantic-equivalence judge behind u."""
    budget: int
    """T, the most turns."""
    max_new_tokens: int
    """The most tokens of a reasoner turn."""
    context_chars: int
    """The most characters of a reasoner prompt."""
    search: Mapping[str, Any] | None = field(default=None, metadata=OMIT_NONE)
    """The UoT search's settings (strategy ``uot`` only; left out of the other strategies' JSON,
    so their keys are unchanged)."""


@dataclass(frozen=True, kw_only=True)
class TranscriptSpec(ProbeSpec):
    """A conversation stored from its transcript: its identifying fields, and for a person's
    session at ``clearsight serve`` the run seed and the judge, which with the person's queries
    determine every reply."""

    instance_id: str
    budget: int
    seed: int | None = field(default=None, metadata=OMIT_NONE)
    judge: str | None = field(default=None, metadata=OMIT_NONE)
    session: str | None = field(default=None, metadata=OMIT_NONE)
    """The transcript's ``meta["session"]``, where it has one."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TranscriptSpec:
        """The spec whose :meth:`to_json` is ``data`` (a stored session's)."""
        try:
            return cls(**data)
        except TypeError as exc:
            raise InputError(f"not the spec of a stored transcript: {dict(data)} ({exc})") from exc


@dataclass(frozen=True)
class AnalysisSpec(Spec):
    """A post-hoc analysis of one finished conversation by an LLM judge."""

    transcript: str
    """The key of the transcript's record."""
    judge: str
    """The judge model's spec."""
    prompt: str
    """The content hash of the analysis prompt (a changed prompt is a new item)."""


@dataclass(frozen=True)
class BeliefSpec(AnalysisSpec):
    """The belief probe: the belief over the options after each sensor reply, elicited from
    ``judge`` (with the ``stated`` read-out, the conversation's own reasoner)."""

    kind: ClassVar[str] = BELIEF_PROTOCOL
    readout_type = BeliefReadouts

    readout: str | None = field(default=None, metadata=OMIT_NONE)
    """``stated`` (the paper's: the distribution the replaying reasoner writes) or None: the
    letter read-out, the only one of runs made before (left out of their JSON, so their keys
    stay)."""


@dataclass(frozen=True)
class QueryTypeSpec(AnalysisSpec):
    """The type of each query of a conversation."""

    kind: ClassVar[str] = QTYPE_PROTOCOL
    readout_type = QueryTypeReadouts

    readout: str | None = field(default=None, metadata=OMIT_NONE)
    """``judge`` (rationale and JSON label) or None: the type names' scores, the only read-out
    of runs made before the judge's (left out of their JSON, so their keys stay)."""


@dataclass(frozen=True)
class JudgeValidationSpec(Spec):
    """One judge's u compared with people's labels of u (``probe judges --human-labels``)."""

    kind: ClassVar[str] = JUDGE_VALIDATION_PROTOCOL
    readout_type = JudgeValidationReadouts

    labels: str
    """The content hash of the labels (a changed label file is a new item)."""
    judge: str
    """The judge's name with its settings (:attr:`~clearsight.probe.judges.Judge.name`)."""


@dataclass(frozen=True)
class QueryTypeValidationSpec(Spec):
    """The query-type judge's types compared with people's labels of query types
    (``probe query-types --human-labels``)."""

    kind: ClassVar[str] = QTYPE_VALIDATION_PROTOCOL
    readout_type = QueryTypeValidationReadouts

    labels: str
    """The content hash of the labels (a changed label file is a new item)."""
    judge: str
    """The judge model's spec."""
    readout: str
    """How its types were read: ``judge`` or ``scores``."""
    prompt: str
    """The content hash of the judge's prompt."""


@dataclass(frozen=True, kw_only=True)
class BuildSpec(Spec):
    """A build stage-1 item: one question answered directly by one sensor ``samples`` times."""

    kind: ClassVar[str] = BUILD_PROTOCOL
    readout_type = BuildReadouts

    instance: Instance
    sensor: str
    sensor_options: Mapping[str, JsonValue] = field(default_factory=dict)
    samples: int
    temperature: float
    prompt: str
    """The content hash of the direct-answer prompt."""
    seed: int
    """The build seed (each question's sampling seed derives from the item's key)."""
