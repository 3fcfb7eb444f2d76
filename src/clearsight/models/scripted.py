"""A backend that replays given outputs: for tests and for re-scoring recorded runs.

Each scripted output is a :class:`Response` (or its JSON form, one per line of a JSONL file).
An output with a ``match`` string answers every request whose text contains it; outputs
without one are replayed in order for the requests no ``match`` claims, and running out of
them is an error rather than a silent repeat.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clearsight.models.base import Capabilities, Request, Response, TokenLogprob
from clearsight.validate import InputError


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
    ) -> None:
        self.name = name
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
        return [self._one(r) for r in requests]


def make_scripted(arg: str, options: Mapping[str, Any]) -> ScriptedBackend:
    """``scripted:<file.jsonl>``: one JSON response per line, optionally with a ``match`` key."""
    path = Path(arg)
    if not arg or not path.is_file():
        raise InputError(f"scripted backend needs a JSONL file of responses; {arg!r} not found")
    ordered: list[Response] = []
    matched: list[tuple[str, Response]] = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{i}: not valid JSON: {exc}") from exc
        response = response_from_json(data)
        if "match" in data:
            matched.append((str(data["match"]), response))
        else:
            ordered.append(response)
    return ScriptedBackend(ordered, matched, name=f"scripted:{path.name}")
