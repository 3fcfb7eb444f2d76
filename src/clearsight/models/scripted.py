"""A backend that replays given outputs: for tests and for re-scoring recorded runs.

Each scripted output is a :class:`Response` (or its JSON form: one per line of a JSONL file,
or a list of them in a JSON or YAML file).
Outputs are replayed as they are written, so a script can stand for a broken model too (a
probability of -1e-9, a list where a mapping belongs): protocols check every reply at the
boundary (:mod:`clearsight.models.replies`) and fail that item with the reason.
An output with a ``match`` string answers every request whose text contains it; outputs
without one are replayed in order for the requests no ``match`` claims, and running out of
them is an error rather than a silent repeat.

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
from pathlib import Path
from typing import Any

import yaml

from clearsight.models.base import Capabilities, Request, Response, TokenLogprob
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


class ScriptedBackend:
    """Replays scripted responses; declares every capability since it fills whatever it is given."""

    capabilities = Capabilities(
        images=True,
        generate=True,
        candidate_probs=True,
        top_logprobs=True,
        n_per_call=True,
        attention_mask=False,
    )

    def __init__(
        self,
        ordered: Sequence[Response] = (),
        matched: Sequence[tuple[str, Response]] = (),
        name: str = "scripted",
        latency_s: float = 0.0,
    ) -> None:
        self.name = name
        self.latency_s = latency_s
        self._ordered = list(ordered)
        self._matched = list(matched)
        self._next = 0
        self._lock = threading.Lock()

    def _one(self, request: Request) -> Response:
        text = "\n".join(m.text for m in request.messages)
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
        responses = [self._one(r) for r in requests]
        if self.latency_s > 0:
            time.sleep(self.latency_s)  # wall time, no CPU: the model's cost is elsewhere
        return responses


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
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
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


#: Options a run passes every backend that a scripted model has no use for (it answers a whole
#: batch at once), accepted and ignored so that a scripted model stands in for any model.
_IGNORED_OPTIONS = frozenset({"batch_size"})


def _latency(options: Mapping[str, Any]) -> float:
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


def make_scripted(arg: str, options: Mapping[str, Any]) -> ScriptedBackend:
    """``scripted:<file>``: the responses of a JSONL file (one a line), or of a JSON or YAML
    file holding a list of them; each optionally with a ``match`` key. Option ``latency_s``:
    seconds each call sleeps."""
    latency = _latency(options)
    path = Path(arg)
    if not arg or not path.is_file():
        raise InputError(
            f"missing script in scripted:{arg}: the backend needs a JSONL file of responses "
            "(or a JSON or YAML file of a list of them)"
        )
    ordered: list[Response] = []
    matched: list[tuple[str, Response]] = []
    for i, data in enumerate(_script_entries(path), 1):
        match, response = _entry_response(data, f"{path} entry {i}")
        if match is None:
            ordered.append(response)
        else:
            matched.append((match, response))
    return ScriptedBackend(ordered, matched, name=f"scripted:{path.name}", latency_s=latency)
