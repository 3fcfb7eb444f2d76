"""A backend that replays given outputs: for tests and for re-scoring recorded runs.

Each scripted output is a :class:`Response` (or its JSON form: one per line of a JSONL file,
or a list of them in a JSON or YAML file).
Outputs are replayed as they are written, so a script can stand for a broken model too (a
probability of -1e-9, a list where a mapping belongs): protocols check every reply at the
boundary (:mod:`clearsight.models.replies`) and fail that item with the reason.
An output with a ``match`` string answers every request whose text contains it; outputs
without one are replayed in order for the requests no ``match`` claims, and running out of
them is an error rather than a silent repeat.

**Masked scoring from a table.** Entries with a ``hidden`` mapping (:class:`ScriptedScores`)
make the backend a :class:`~clearsight.models.base.MaskedScorer` (it declares the
``attention_mask`` capability): a masked-scoring request gets the scores of the first such entry
whose ``match`` its text contains (every request without one) and whose ``hide`` ranges and
``share``, where given, are the request's — the candidates' ``sequence_probs`` and
``end_probs`` as written, or, with ``failed``, that request's failure. So trajectory grounding
runs without torch: ``{"match": "Observation:", "hidden": {"share": 1.0, "sequence_probs":
{"3": 1.0}}}`` answers every fully masked read-out with the numeral 3.

The ``latency_s`` option makes every ``complete`` call (one batch, as a GPU server answers a
batch) take that many seconds of wall time without using the CPU (the calling thread sleeps):
a stand-in for a model whose cost is elsewhere, for measuring how an executor keeps replicas
busy (``benchmarks/scale.py``).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import JsonValue

from clearsight.config import load_yaml
from clearsight.models.base import (
    Capabilities,
    HiddenRequest,
    HiddenScores,
    Message,
    Request,
    RequestFailedError,
    Response,
    TokenLogprob,
)
from clearsight.validate import InputError, jsonl_values, short_repr


def response_from_json(data: Mapping[str, Any]) -> Response:
    """Rebuild a :class:`Response` from :meth:`Response.to_json` output (or a subset of it)."""
    logprobs = data.get("token_logprobs")
    return Response(
        texts=tuple(data.get("texts", ())),
        token_logprobs=None
        if logprobs is None
        else tuple(
            tuple(
                TokenLogprob(t["token"], float(t["logprob"]), tuple(map(tuple, t.get("top", ()))))
                for t in sample
            )
            for sample in logprobs
        ),
        candidate_probs=data.get("candidate_probs"),
        uncovered_mass=data.get("uncovered_mass"),
        usage=dict(data.get("usage", {})),
        latency_s=float(data.get("latency_s", 0.0)),
        extra=dict(data.get("extra", {})),
    )


@dataclass(frozen=True)
class ScriptedScores:
    """One row of a scripted backend's masked-scoring table: what a masked-scoring request
    whose text contains ``match`` gets (its ``scores``, or the failure), where its hidden
    ranges are ``hide`` and its share ``share`` (None: any)."""

    match: str
    scores: HiddenScores | RequestFailedError
    hide: tuple[tuple[int, int], ...] | None = None
    share: float | None = None

    def answers(self, request: HiddenRequest, text: str) -> bool:
        """Whether this row answers ``request`` (whose messages' text is ``text``)."""
        return (
            self.match in text
            and (self.hide is None or self.hide == request.hide)
            and (self.share is None or self.share == request.share)
        )


class ScriptedBackend:
    """Replays scripted responses; declares every capability it is given outputs for (masked
    scoring only with a table of :class:`ScriptedScores`)."""

    def __init__(
        self,
        ordered: Sequence[Response] = (),
        matched: Sequence[tuple[str, Response]] = (),
        name: str = "scripted",
        latency_s: float = 0.0,
        scores: Sequence[ScriptedScores] = (),
    ) -> None:
        self.name = name
        self.latency_s = latency_s
        self._ordered = list(ordered)
        self._matched = list(matched)
        self._scores = list(scores)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def capabilities(self) -> Capabilities:
        """Everything it is given outputs for; masked scoring only with a table of scores. A
        property, so a subclass may declare its own as a class attribute."""
        return Capabilities(
            images=True,
            generate=True,
            candidate_probs=True,
            top_logprobs=True,
            n_per_call=True,
            attention_mask=bool(self._scores),
        )

    def _one(self, request: Request) -> Response:
        text = _text(request.messages)
        for needle, response in self._matched:
            if needle in text:
                return response
        with self._lock:
            if self._next >= len(self._ordered):
                raise InputError(
                    f"{self.name}: no scripted output left for request {self._next + 1} "
                    f"({len(self._ordered)} ordered outputs given)"
                )
            self._next += 1
            return self._ordered[self._next - 1]

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        """The scripted response of each request (see the module docstring)."""
        responses = [self._one(r) for r in requests]
        if self.latency_s > 0:
            time.sleep(self.latency_s)  # wall time, no CPU: the model's cost is elsewhere
        return responses

    def score_hidden(
        self, requests: Sequence[HiddenRequest], batch_size: int | None = None
    ) -> list[HiddenScores | RequestFailedError]:
        """The table's scores of each request (module docstring); a request no row answers
        fails alone, saying so. ``batch_size`` is ignored (one call answers every request)."""
        out: list[HiddenScores | RequestFailedError] = []
        for request in requests:
            text = _text(request.messages)
            row = next((r for r in self._scores if r.answers(request, text)), None)
            if row is None:
                reason = f"{self.name}: no scripted scores for this masked-scoring request"
                out.append(RequestFailedError(reason, 1))
            else:
                out.append(row.scores)
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        return out


def _text(messages: Sequence[Message]) -> str:
    """The text a ``match`` is looked for in: the messages' texts, one a line."""
    return "\n".join(m.text for m in messages)


def _script_entries(path: Path) -> list[Any]:
    """The entries of a script file: one JSON object a line (``.jsonl``), or a list of them in
    a JSON (``.json``) or YAML (``.yaml``, ``.yml``) file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable script in {path}: {exc}") from exc
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        try:
            data = load_yaml(text)  # within bounds: an alias bomb or deep nesting is refused
        except yaml.YAMLError as exc:
            raise InputError(f"invalid YAML in {path}: {' '.join(str(exc).split())}") from exc
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InputError(f"invalid JSON in {path}: {exc}") from exc
    else:
        data = [value for _, value in jsonl_values(text, path)]
    if not isinstance(data, list):
        raise InputError(f"invalid script in {path}: it holds a list of responses")
    return data


def _entry_response(data: Any, where: str) -> tuple[str | None, Response]:
    """One script entry as its ``match`` text (None: replayed in order) and its response."""
    if not isinstance(data, dict):
        raise InputError(f"invalid response in {where}: a mapping, got {short_repr(data)}")
    texts = data.get("texts", ())
    if not isinstance(texts, list | tuple) or not all(isinstance(t, str) for t in texts):
        raise InputError(f"invalid texts in {where}: a list of strings, got {short_repr(texts)}")
    try:
        response = response_from_json(data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise InputError(f"invalid response in {where}: {exc}") from exc
    return (str(data["match"]) if "match" in data else None), response


def _probs(value: Any, what: str, where: str) -> dict[str, Any]:
    """A mapping of candidates to their (scripted, unchecked) values."""
    if not isinstance(value, dict):
        raise InputError(f"invalid {what} in {where}: a mapping, got {short_repr(value)}")
    return {str(k): v for k, v in value.items()}


def _ranges(value: Any, where: str) -> tuple[tuple[int, int], ...]:
    """Hidden character ranges: a list of ``[start, end]`` integer pairs."""
    pairs = value if isinstance(value, list | tuple) else None
    if pairs is None or not all(
        isinstance(r, list | tuple)
        and len(r) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        for r in pairs
    ):
        raise InputError(f"invalid hide in {where}: [start, end] pairs, got {short_repr(value)}")
    return tuple((int(a), int(b)) for a, b in pairs)


def _count(hidden: Mapping[str, JsonValue], key: str, where: str) -> int:
    value = hidden.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"invalid {key} in {where}: an integer, got {short_repr(value)}")
    return value


def _entry_scores(data: Mapping[str, object], where: str) -> ScriptedScores:
    """A script entry with a ``hidden`` mapping as a row of the masked-scoring table: ``hide``
    and ``share`` (optional: which requests it answers), then ``failed`` (a reason) or
    ``sequence_probs`` and optional ``end_probs``, ``hidden_tokens`` and ``prompt_tokens``."""
    hidden = data["hidden"]
    if not isinstance(hidden, dict):
        raise InputError(f"invalid hidden in {where}: a mapping, got {short_repr(hidden)}")
    hide = None if hidden.get("hide") is None else _ranges(hidden["hide"], where)
    share = hidden.get("share")
    if share is not None and (
        isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1
    ):
        raise InputError(f"invalid share in {where}: a number in [0, 1], got {short_repr(share)}")
    scores: HiddenScores | RequestFailedError
    if "failed" in hidden:
        scores = RequestFailedError(str(hidden["failed"]), 1)
    else:
        scores = HiddenScores(
            _probs(hidden.get("sequence_probs"), "sequence_probs", where),
            _probs(hidden.get("end_probs", {}), "end_probs", where),
            hidden_tokens=_count(hidden, "hidden_tokens", where),
            prompt_tokens=_count(hidden, "prompt_tokens", where),
        )
    match = str(data["match"]) if "match" in data else ""
    return ScriptedScores(match, scores, hide, None if share is None else float(share))


#: Options a run passes every backend that a scripted model has no use for (it answers a whole
#: batch at once), accepted and ignored so that a scripted model stands in for any model.
_IGNORED_OPTIONS = frozenset({"batch_size"})


def _latency(options: Mapping[str, JsonValue]) -> float:
    """The ``latency_s`` option (seconds per call, default 0); any other option than those in
    :data:`_IGNORED_OPTIONS` is refused."""
    unknown = sorted(set(options) - {"latency_s"} - _IGNORED_OPTIONS)
    if unknown:
        raise InputError(f"unknown scripted option(s) {', '.join(unknown)}; known: latency_s")
    latency = options.get("latency_s", 0.0)
    if isinstance(latency, bool) or not isinstance(latency, int | float):
        raise InputError(f"latency_s must be a number of seconds, got {short_repr(latency)}")
    if not (math.isfinite(latency) and latency >= 0):
        raise InputError(f"latency_s must be finite and >= 0, got {latency!r}")
    return float(latency)


def make_scripted(arg: str, options: Mapping[str, JsonValue]) -> ScriptedBackend:
    """``scripted:<file>``: the responses of a JSONL file (one a line), or of a JSON or YAML
    file holding a list of them; each optionally with a ``match`` key, and entries with a
    ``hidden`` mapping forming the masked-scoring table (module docstring). Option
    ``latency_s``: seconds each call sleeps."""
    latency = _latency(options)
    path = Path(arg)
    if not arg or not path.is_file():
        raise InputError(
            f"missing script in scripted:{arg}: the backend needs a JSONL file of responses "
            "(or a JSON or YAML file of a list of them)"
        )
    ordered: list[Response] = []
    matched: list[tuple[str, Response]] = []
    scores: list[ScriptedScores] = []
    for i, data in enumerate(_script_entries(path), 1):
        where = f"{path} entry {i}"
        if isinstance(data, dict) and "hidden" in data:
            scores.append(_entry_scores(data, where))
            continue
        match, response = _entry_response(data, where)
        if match is None:
            ordered.append(response)
        else:
            matched.append((match, response))
    name = f"scripted:{path.name}"
    return ScriptedBackend(ordered, matched, name=name, latency_s=latency, scores=scores)
