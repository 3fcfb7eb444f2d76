"""What a protocol's human sessions are given by ``clearsight serve`` and answer it.

:class:`ServeSettings` are the server's settings: where it listens, its mode (human probe
sessions, human sweep sessions, or the operator's browser of the run) and how the sessions it
runs are set up. The session fields (sensor, K, budget, instance set, seed, the signal a
session is assigned) enter every human session's item spec, so a session is a pure function of
its spec like any model transcript; the CLI flags of ``clearsight serve`` mirror these fields
one to one.

A protocol says what the server shows of its runs in its face (:attr:`ProtocolFace.serve
<clearsight.faces.face.ProtocolFace.serve>`, a :class:`Serving`): the human sessions people
take part in (a :class:`SessionHost` made from the run directory and the settings), a stored
record's conversation on the operator's record page, and which records the browser must not
read. The server (:mod:`clearsight.ui`) hosts the sessions without knowing whose they are: it
holds the host's lock while serving, makes the host's pages from the :class:`Site` every page
shares, and warms the host up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

if TYPE_CHECKING:
    import jinja2
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

__all__ = [
    "LOOPBACK_HOSTS",
    "ServeSettings",
    "ServeSignal",
    "Serving",
    "SessionHost",
    "Site",
    "SitePages",
]

#: Host names that only this machine can reach; binding elsewhere is the user's explicit choice.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

#: The consistency signal a person is shown: one of the probe's three for every session, or
#: ``balanced``: assigned per session so each person's sessions cycle through all three.
ServeSignal = Literal["true", "none", "random", "balanced"]


class ServeSettings(BaseModel):
    """How ``clearsight serve`` listens and which sensor the human reasoner talks to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(
        "127.0.0.1",
        description="Interface to bind; the loopback default keeps the page private to this "
        "machine (anything else exposes sessions and records to the network).",
    )
    port: int = Field(8765, ge=0, le=65535, description="TCP port to listen on (0: any free).")
    sensor: str = Field(
        "perceiver:detector",
        min_length=1,
        description="Backend name of the VLM sensor (see clearsight.models): the default, the "
        "perceiver's detector mode, answers from a COCO detector's detections in well under a "
        "second on a CPU; or perceiver:llm, hf:<path>, openai:<url>#<model>, "
        "scripted:<file.jsonl>.",
    )
    sensor_options: dict[str, JsonValue] = Field(
        default_factory=dict, description="Options passed to the sensor backend's factory."
    )
    judge: str = Field(
        "embedding",
        min_length=1,
        description="Semantic-equivalence judge behind u: embedding (all-MiniLM-L6-v2, "
        "calibrated threshold), embedding:<t>, exact, or llm:<model spec>.",
    )
    k: int = Field(5, ge=1, le=50, description="Samples K per sensor query; the reply shows u/K.")
    budget: int = Field(
        100, ge=1, le=1000, description="Budget T: turns (queries plus the commit) per session."
    )
    instances: str = Field(
        "bundled",
        min_length=1,
        description="Instance set the human plays: 'bundled' (the photos shipped with "
        "clearsight) or a source the probe's instance loader accepts.",
    )
    seed: int = Field(0, description="Run seed; each turn's sensor draw is seeded from it.")
    signal: ServeSignal = Field(
        "true",
        description="Consistency signal shown with each reply (the ablation of the paper's "
        "Fig. 3): true u, none, a random u drawn uniformly from 1..K, or balanced: each "
        "person's sessions cycle through the three in an order seeded by the run seed and "
        "their name. Stored with each session; never named on the person's pages.",
    )
    operator: bool = Field(
        False,
        description="Operator mode: browse the run's records and report files instead of "
        "hosting human sessions (a server never does both, so a player cannot reach them).",
    )
    sweep: bool = Field(
        False,
        description="Sweep mode: people answer the sweep run's boxed-object questions on its "
        "degraded images, stored as human:<name> sweep records (instead of probe sessions).",
    )
    wording: str | None = Field(
        None,
        description="Sweep mode: the wording whose questions people answer (default: the "
        "run's main letter wording).",
    )

    @model_validator(mode="after")
    def _one_mode(self) -> ServeSettings:
        if self.operator and self.sweep:
            raise ValueError("operator and sweep are two modes: choose one")
        if self.wording is not None and not self.sweep:
            raise ValueError("wording applies to sweep mode only")
        return self

    @property
    def hosted(self) -> str:
        """The protocol whose sessions a server of these settings hosts (outside operator
        mode): the one its mode flag names (``--sweep``), else the probe's, the default."""
        return "sweep" if self.sweep else "probe"


@dataclass(frozen=True)
class Site:
    """What every page of a served run shares: the run directory, the settings, the templates
    and the form token."""

    run_dir: Path
    settings: ServeSettings
    env: jinja2.Environment
    token: str


class SitePages(Protocol):
    """The pages of one mode of the server: its routes and its error page."""

    def routes(self) -> Sequence[BaseRoute]:
        """Every route of the mode (its pages, its actions, the static assets)."""

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """An HTTP error as the mode's error page."""


class SessionHost(Protocol):
    """A protocol's human sessions as the server hosts them (the module docstring).

    ``title``: what the server's start line calls them (``human sessions``); ``exposes``: what
    anyone who can reach a server bound beyond loopback could do (``add sessions to the run``).
    """

    title: str
    exposes: str

    def writing(self) -> AbstractContextManager[None]:
        """Hold the run directory's writer lock while serving where sessions can be taken."""

    def blocked_reason(self) -> str | None:
        """Why sessions are refused in this run, or None."""

    def prepare(self) -> None:
        """Make what the sessions need before the first request (a new run's store)."""

    def warm_up(self) -> None:
        """Load what the first session would wait for (run in a background thread)."""

    def pages(self, site: Site) -> SitePages:
        """The sessions' pages and actions on ``site``."""


@dataclass(frozen=True)
class Serving:
    """What a protocol's face gives ``clearsight serve`` (each part optional):

    * ``sessions(run_dir, settings)``: its human sessions (:class:`SessionHost`);
    * ``conversation(record)``: a stored record's conversation as the operator's record page
      shows it (its ``_transcript.html``), None for a record without one;
    * ``withheld(record)``: why the browser must not read a record's raw output and read-outs
      (an unfinished person's session holds the gold answer), or None. ``record``: the record
      as the operator's pages read it (its ``protocol``, ``status``, ``readouts``, ``raw``)."""

    sessions: Callable[[Path, ServeSettings], SessionHost] | None = None
    conversation: Callable[[Mapping[str, object]], object | None] | None = None
    withheld: Callable[[Mapping[str, object]], str | None] | None = None
