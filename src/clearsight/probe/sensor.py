"""The noisy sensor: any VLM backend asked K times, one reply realised, its consistency u.

docs/methods.md §6 / the paper's eq. (2)-(3): for a query ``q`` the sensor draws K samples
``a_1..a_K`` from the VLM at temperature 1.0 given only ``(image, q)`` (it is stateless: no
history), realises one reply ``a = a_I`` with ``I`` uniform from the seeded generator, and
reports ``u = sum_i 1[sem_eq(a_i, a)]`` (``a`` counts itself, so ``1 <= u <= K``), shown to a
reasoner as "(u/K)". Where the backend declares ``n_per_call`` the K samples come from one
request with ``n = K`` (one prefill shared by the samples); otherwise from K calls of one
request each, with distinct seeds. A backend failure does not stop a conversation: the reply
comes back with ``error`` set and no samples.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import numpy.typing as npt
from pydantic import JsonValue

from clearsight.execute import progress
from clearsight.probe.instances import Instance, instance_image
from clearsight.probe.judges import Judge, consistency, make_judge
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend


class ReplyJson(TypedDict):
    """A :class:`SensorReply` as stored (tuples as lists)."""

    query: str
    samples: list[str]
    index: int
    reply: str
    u: int
    k: int
    error: str | None
    judge: str
    same: list[bool]
    calls: int
    latency_s: float


@dataclass(frozen=True)
class SensorReply:
    """One sensor call.

    ``samples``: the K raw replies; ``index``: which one was realised (-1 on error); ``reply``:
    ``samples[index]``; ``u``: samples equivalent to the reply, itself included; ``same``: the
    judge's verdict per sample (``same[index]`` is True); ``judge``: the judge's name with its
    settings; ``calls``: backend requests made; ``error``: why the call failed (then no
    samples, u = 0).
    """

    query: str
    samples: tuple[str, ...]
    index: int
    reply: str
    u: int
    k: int
    error: str | None = None
    judge: str = ""
    same: tuple[bool, ...] = ()
    calls: int = 0
    latency_s: float = 0.0

    def shown(self, u: int | None = None) -> str:
        """The reply as a reasoner reads it, ``text (u/K)``; ``u`` overrides the shown
        consistency (the random-signal ablation)."""
        if self.error is not None:
            return f"[the sensor failed: {self.error}]"
        shown_u = self.u if u is None else u
        return f"{self.reply} ({shown_u}/{self.k})"

    def to_json(self) -> ReplyJson:
        """JSON-able dict (tuples as lists)."""
        return {
            "query": self.query,
            "samples": list(self.samples),
            "index": self.index,
            "reply": self.reply,
            "u": self.u,
            "k": self.k,
            "error": self.error,
            "judge": self.judge,
            "same": list(self.same),
            "calls": self.calls,
            "latency_s": self.latency_s,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> SensorReply:
        """The reply :meth:`to_json` wrote."""
        return SensorReply(
            query=str(data["query"]),
            samples=tuple(str(s) for s in data.get("samples", ())),
            index=int(data["index"]),
            reply=str(data["reply"]),
            u=int(data["u"]),
            k=int(data["k"]),
            error=data.get("error"),
            judge=str(data.get("judge", "")),
            same=tuple(bool(s) for s in data.get("same", ())),
            calls=int(data.get("calls", 0)),
            latency_s=float(data.get("latency_s", 0.0)),
        )


class Sensor:
    """A VLM backend used as a stateless noisy sensor with K samples per query.

    ``backend``: a model spec (``perceiver``, ``hf:<id>``, ``openai:...``, ``scripted:...``)
    loaded lazily with ``options``, or a backend object. ``judge``: a judge or its name
    (:func:`clearsight.probe.judges.make_judge`). ``one_call``: force one request with ``n = K``
    (True) or K requests (False); None decides from the backend's capabilities.
    """

    def __init__(
        self,
        backend: str | Backend,
        options: Mapping[str, JsonValue] | None = None,
        k: int = 5,
        *,
        judge: Judge | str = "embedding",
        temperature: float = 1.0,
        max_new_tokens: int = 48,
        one_call: bool | None = None,
    ) -> None:
        if k < 1:
            raise InputError(f"K (samples per query) must be >= 1, got {k}")
        self.k = k
        self.options = dict(options or {})
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens
        self._one_call = one_call
        if isinstance(backend, str):
            self.spec = backend
            self._backend: Backend | None = None
        else:
            self.spec = backend.name
            self._backend = backend
        self._judge_spec = judge if isinstance(judge, str) else judge.name
        self._judge: Judge | None = None if isinstance(judge, str) else judge
        self._images: dict[str, npt.NDArray[np.uint8]] = {}
        self.repaired = 0  # replies whose lone surrogates were replaced, since it was made

    @property
    def name(self) -> str:
        """The sensor's model spec."""
        return self.spec

    @property
    def backend(self) -> Backend:
        """The backend (loaded on first use; one per process and spec, shared with whatever else
        uses that model)."""
        if self._backend is None:
            from clearsight.models import shared_backend

            self._backend = shared_backend(self.spec, self.options)
        return self._backend

    @property
    def judge(self) -> Judge:
        """The semantic-equivalence judge (built on first use)."""
        if self._judge is None:
            self._judge = make_judge(self._judge_spec)
        return self._judge

    def load(self) -> None:
        """Load the backend and the judge now (the judge's model, and the embedding judge's
        calibrated threshold, by one verdict), so that what is timed after it — a conversation's
        seconds (Table 8), a person's first query — excludes model loading."""
        _ = self.backend
        self.judge.equivalent([("a red bicycle", "a red bike")])

    @property
    def one_call(self) -> bool:
        """Whether the K samples come from one request (``n = K``)."""
        if self._one_call is not None:
            return self._one_call
        return bool(self.backend.capabilities.n_per_call)

    def image(self, instance: Instance) -> npt.NDArray[np.uint8]:
        """The instance's image (kept for the last few instances asked about)."""
        if instance.id not in self._images:
            if len(self._images) >= 4:
                self._images.pop(next(iter(self._images)))
            self._images[instance.id] = instance_image(instance)
        return self._images[instance.id]

    def sample(
        self, instance: Instance, prompt: str, n: int, seed: int, *, max_new_tokens: int = 0
    ) -> tuple[tuple[str, ...], int]:
        """``n`` raw samples for ``prompt`` about the instance's image and the number of
        backend calls made: one request with ``n`` samples, or ``n`` one-sample requests with
        seeds seed..seed+n-1 sent one call at a time. Each call's answer is said to the run's
        progress bar (:func:`clearsight.execute.progress.say`)."""
        from clearsight.models.base import Decoding, Message, PartialBatchError, Request
        from clearsight.models.replies import REPLACED_SURROGATES, complete_checked

        image = self.image(instance)
        message = (Message.user(image, prompt),)
        tokens = max_new_tokens or self.max_new_tokens

        def decoding(s: int) -> Decoding:
            return Decoding(max_new_tokens=tokens, temperature=self.temperature, seed=s)

        if self.one_call:
            calls = [[Request(message, decoding(seed), n=n)]]
        else:
            calls = [[Request(message, decoding(seed + i))] for i in range(n)]
        responses = []
        for requests in calls:
            try:
                responses += complete_checked(self.backend, requests, count_texts=False)
            except PartialBatchError as exc:
                bad = next(r for r in exc.results if not hasattr(r, "texts"))
                raise RuntimeError(str(bad)) from exc
            answered = sum(len(r.texts) for r in responses)
            progress.say(f"sensor: {answered} of {n} samples")
        self.repaired += sum(REPLACED_SURROGATES in r.extra for r in responses)
        texts = tuple(t.strip() for r in responses for t in r.texts)
        if len(texts) != n:
            raise InputError(
                f"too few samples from the sensor: {len(texts)} of the {n} asked for "
                f"(give {self.spec} {n} texts a reply, or ask for fewer)"
            )
        return texts, len(calls)

    def ask(self, instance: Instance, query: str, rng: np.random.Generator) -> SensorReply:
        """Ask ``query`` about the instance's image: K samples, one realised uniformly with
        ``rng`` (after the decoding seed is drawn from it), u from the judge. A failure of the
        backend or the judge is returned as a reply with ``error`` set."""
        started = time.perf_counter()
        seed = int(rng.integers(0, 2**31 - 1))
        index = int(rng.integers(0, self.k))
        self.image(instance)  # a missing image is the instance's fault: InputError, not a reply
        try:
            samples, calls = self.sample(instance, query, self.k, seed)
            reply = samples[index]
            u, same = consistency(self.judge, reply, samples, query)
        except Exception as exc:  # recorded in the transcript; the conversation goes on
            return SensorReply(
                query=query,
                samples=(),
                index=-1,
                reply="",
                u=0,
                k=self.k,
                error=f"{type(exc).__name__}: {exc}",
                judge=self._judge_spec,
                latency_s=time.perf_counter() - started,
            )
        return SensorReply(
            query=query,
            samples=samples,
            index=index,
            reply=reply,
            u=u,
            k=self.k,
            judge=self.judge.name,
            same=same,
            calls=calls,
            latency_s=time.perf_counter() - started,
        )
