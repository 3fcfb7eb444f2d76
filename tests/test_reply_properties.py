"""Whatever a backend replies, every item ends as an ``ok`` record or as a failed record with a
reason, and the store takes it: never an exception that stops the run. Arbitrary replies (any
JSON value, any string with lone surrogates, NaN and infinities, wrong types, missing fields, a
backend that raises or answers with too few replies) go through each protocol's read-out path
— the sweep's letter and verbalized questions, grounding's trajectories, edits, judge, sampled
variations and numeral read-out, the probe's sensor samples and reasoner replies — and into a
real run store. A reply that passes the boundary check (:mod:`clearsight.models.replies`)
is read and stored as ``ok``; a well-formed reply always is."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clearsight.models
from clearsight.execute import write_or_fail
from clearsight.models.base import (
    Capabilities,
    PartialBatchError,
    Request,
    RequestFailedError,
    Response,
    TokenLogprob,
)
from clearsight.models.replies import UnreadableReplyError, checked_reply
from clearsight.store import Record, RunStore

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Text with every code point a reply may carry, lone surrogates included.
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=24) | st.sampled_from(
    ["\ud83d", "Answer: A\nConfidence: 80 \ud83d", "\ud83d\ude00", "A", "Answer: B", ""]
)
NUMBER = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70)
_SCALAR = st.none() | st.booleans() | NUMBER | TEXT
JSON = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
PROB = st.floats(0.0, 1.0) | NUMBER | JSON


@st.composite
def replies(draw: st.DrawFn, request: Request) -> Any:
    """One reply to ``request``: mostly a well-formed one, else a response with any of its
    fields broken, or not a response at all."""
    kind = draw(st.sampled_from(["good", "good", "broken", "broken", "not a response"]))
    if kind == "not a response":
        return draw(JSON)
    good = kind == "good"
    n = request.n if request.generate else draw(st.integers(0, 2))
    text = st.text(max_size=40) | st.sampled_from(["Answer: A\nConfidence: 70", "B"])
    texts: Any = draw(st.lists(text if good else TEXT, min_size=n, max_size=n))
    probs: Any = None
    if request.candidates:
        keys = st.sampled_from(request.candidates)
        probs = draw(st.none() | st.dictionaries(keys, st.floats(0.0, 1.0), max_size=6))
    logprobs: Any = None
    extra: Any = draw(st.dictionaries(st.text(max_size=6), JSON, max_size=2))
    if not good:
        field = draw(st.sampled_from(["texts", "probs", "logprobs", "extra", "usage", "latency"]))
        if field == "texts":
            texts = draw(JSON | st.lists(TEXT | NUMBER, max_size=3))
        elif field == "probs":
            keys = TEXT | st.sampled_from(request.candidates or ("A",))
            probs = draw(JSON | st.dictionaries(keys, PROB, max_size=4))
        elif field == "logprobs":
            token = st.builds(TokenLogprob, TEXT, NUMBER, st.just(()))
            logprobs = draw(JSON | st.lists(st.lists(token, max_size=2), max_size=2))
        elif field == "extra":
            extra = draw(JSON)
        usage = draw(JSON) if field == "usage" else {}
        latency = draw(NUMBER) if field == "latency" else 0.0
        return Response(texts, logprobs, probs, None, usage, latency, extra)
    return Response(tuple(texts), candidate_probs=probs, extra=extra)


class Replier:
    """A backend that answers each request with a reply drawn for it, and as a whole batch
    answers normally, raises, answers with one reply too few, or keeps part of a batch."""

    name = "replier"
    capabilities = Capabilities(generate=True, candidate_probs=True, n_per_call=True)

    def __init__(self) -> None:
        self.data: Any = None
        self.batch = "normal"
        self.drawn: list[tuple[Request, Any]] = []

    def complete(self, requests: Sequence[Request]) -> list[Any]:
        out = [self.data.draw(replies(r)) for r in requests]
        self.drawn += list(zip(requests, out, strict=True))
        if self.batch == "raises":
            raise RuntimeError("the server went away")
        if self.batch == "short" and len(requests) > 1:
            return out[:-1]
        if self.batch == "partial" and len(requests) > 1:
            raise PartialBatchError([RequestFailedError("timed out", 3), *out[1:]])
        return out


BATCH = st.sampled_from(["normal", "normal", "raises", "short", "partial"])


@pytest.fixture(scope="module")
def replier() -> Iterator[Replier]:
    """The one backend every model name loads to in this module."""
    import clearsight.grounding.unit
    import clearsight.sweep.unit

    backend = Replier()
    patch = pytest.MonkeyPatch()
    for module in (clearsight.models, clearsight.sweep.unit, clearsight.grounding.unit):
        patch.setattr(module, "shared_backend", lambda *_a, **_k: backend)
    yield backend
    patch.undo()


def _check_stored(
    replier: Replier, store: RunStore, records: Sequence[Record], keys: Sequence[str]
) -> None:
    """One record per key, each ok or failed with a reason, and all stored as they are."""
    assert replier.drawn, "the unit never asked the backend"
    assert [r.key for r in records] == list(keys)
    for r in records:
        assert r.status in ("ok", "failed")
        assert r.status == "ok" or (isinstance(r.error, str) and r.error.strip())
    assert write_or_fail(store, records) == list(records)  # nothing the store refused


def _ok_where_well_formed(replier: Replier, records: Sequence[Record], key_of: Any) -> None:
    """A reply that passes the check leaves its item ok (the unit's own items only)."""
    if replier.batch != "normal":
        return
    by_key = {r.key: r for r in records}
    for request, reply in replier.drawn:
        key = key_of(request)
        try:
            checked_reply(reply, request)
        except UnreadableReplyError:
            continue
        assert by_key[key].status == "ok", (reply, by_key[key].error)


# --------------------------------------------------------------------------------------------
# The boundary itself


@SETTINGS
@given(data=st.data(), generate=st.booleans(), n=st.integers(1, 3))
def test_the_check_passes_a_storable_reply_or_refuses_with_a_reason(
    data: st.DataObject, generate: bool, n: int
) -> None:
    from clearsight.store import compact_json

    messages = (clearsight.models.Message.user("q"),)
    request = Request(messages, n=n, candidates=("A", "B"), generate=generate)
    reply = data.draw(replies(request))
    try:
        checked = checked_reply(reply, request)
    except UnreadableReplyError as exc:
        why = str(exc)
        assert why.strip()
        return
    compact_json(checked.to_json()).encode("utf-8")  # storable as it is
    for p in (checked.candidate_probs or {}).values():
        assert 0.0 <= p <= 1.0
    assert len(checked.texts) == n or not generate


# --------------------------------------------------------------------------------------------
# The sweep: letter and verbalized questions


@pytest.fixture(scope="module")
def sweep_unit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, RunStore]]:
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep

    cfg = SweepConfig(
        scene_ids=("skimage-chelsea",),
        arms=(),
        controls=("clean", "blank"),
        wordings=("mcq.reason", "verbal.plain"),
    )
    (unit,) = plan_sweep(cfg).units
    with RunStore.open(tmp_path_factory.mktemp("sweep") / "run") as store:
        store.add_items(unit.items)
        yield unit, store


@SETTINGS
@given(data=st.data(), batch=BATCH)
def test_sweep_items_end_ok_or_failed(
    data: st.DataObject, batch: str, replier: Replier, sweep_unit: tuple[Any, RunStore]
) -> None:
    from clearsight.sweep.unit import run_unit

    unit, store = sweep_unit
    replier.data, replier.batch, replier.drawn = data, batch, []
    records = run_unit(unit)
    _check_stored(replier, store, records, unit.keys)
    # one request per item, in order: a batch answered normally maps reply i to item i
    keys = iter(unit.keys)
    _ok_where_well_formed(replier, records, lambda _r: next(keys))


# --------------------------------------------------------------------------------------------
# Trajectory grounding: trajectories, edits, judge, sampled variations, the numeral read-out


def _grounding_units() -> list[Any]:
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.plan import plan_edits, plan_judge, plan_trajectories, plan_variations
    from clearsight.grounding.problems.bundled import bundled_problems
    from clearsight.grounding.specs import EDIT, JUDGE, TRAJECTORY, VARIATION
    from clearsight.grounding.trajectories.trajectory import good_trajectory
    from clearsight.grounding.unit import GroundingUnit

    cfg = GroundingConfig(
        model="scripted:m", generator="scripted:g", judge="scripted:j", variation_samples=1
    )
    problems = bundled_problems(2)
    own = {p.id: {"trajectory": good_trajectory(p).to_json()} for p in problems}
    stages = [
        (TRAJECTORY, plan_trajectories(cfg, problems)),
        (EDIT, plan_edits(cfg, problems)),
        (JUDGE, plan_judge(cfg, problems, {})),
        (VARIATION, plan_variations(cfg, problems, own)),
    ]
    return [GroundingUnit(kind, "m", {}, tuple(items)) for kind, items in stages]


@pytest.fixture(scope="module")
def grounding_units(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, RunStore]]:
    units = _grounding_units()
    assert all(u.items for u in units)
    with RunStore.open(tmp_path_factory.mktemp("grounding") / "run") as store:
        for unit in units:
            store.add_items(unit.items)
        yield units, store


@SETTINGS
@given(data=st.data(), batch=BATCH)
def test_grounding_items_end_ok_or_failed(
    data: st.DataObject, batch: str, replier: Replier, grounding_units: tuple[Any, RunStore]
) -> None:
    from clearsight.grounding.unit import run_unit

    units, store = grounding_units
    for unit in units:
        replier.data, replier.batch, replier.drawn = data, batch, []
        records = run_unit(unit)
        _check_stored(replier, store, records, unit.keys)
        assert not any(str(r.error).startswith(("TypeError", "AttributeError")) for r in records)


def _numeral_row() -> Any:
    """A prepared numeral read-out: numerals 0-9 one token each (ids 0-9), 10 as the tokens of
    1 then 0, so the read-out needs the row after 1 too."""
    from clearsight.grounding.confidence.numerals import NUMERALS
    from clearsight.models.base import Message
    from clearsight.models.hf_hidden import Prepared

    request = Request((Message.user("q"),), candidates=NUMERALS, generate=False)
    seqs = (*((k,) for k in range(10)), (1, 0))
    return Prepared(request, seqs, (1,))


class _Tokenizer:
    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(map(str, ids))


class _NumeralBackend:
    tokenizer = _Tokenizer()


def _log_softmax(logits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return np.asarray(shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True)))


@SETTINGS
@given(
    row=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=24, max_size=24),
    normalised=st.booleans(),
)
def test_the_numeral_read_out_is_a_distribution_or_a_reason(
    row: list[float], normalised: bool
) -> None:
    from clearsight.grounding.confidence.elicit import (
        Elicited,
        ElicitFailure,
        ElicitRequest,
        elicited,
    )
    from clearsight.models.base import Message, TextPart
    from clearsight.models.hf_hidden import row_scores

    logp = np.array(row, dtype=np.float64).reshape(2, 12)
    if normalised and np.isfinite(logp).all():
        logp = _log_softmax(np.clip(logp, -50, 50))
    scores = row_scores(_NumeralBackend(), _numeral_row(), logp, 7)  # type: ignore[arg-type]
    if isinstance(scores, RequestFailedError):
        assert scores.reason
        return
    slot = (Message.user("q"), Message("assistant", (TextPart("Confidence: "),)))
    out = elicited(ElicitRequest(slot), scores)
    if isinstance(out, ElicitFailure):
        assert out.reason
        return
    assert isinstance(out, Elicited)
    assert all(0.0 <= p <= 1.0 for p in out.raw)
    if out.probs is not None:
        assert out.expected is not None
        assert math.isclose(sum(out.probs), 1.0, abs_tol=1e-9)
        assert 0.0 <= out.expected <= 1.0 + 1e-12


# --------------------------------------------------------------------------------------------
# The probe: the sensor's samples and the reasoner's replies


@pytest.fixture(scope="module")
def probe_specs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, RunStore]]:
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.plan import plan_probe

    cfg = ProbeConfig(
        instance_ids=("bundled/coffee-drink",),
        reasoners=("scripted:r",),
        sensor="scripted:s",
        strategies=("direct", "bp"),
        judge="exact",
        runs=1,
        budget=3,
        k=2,
    )
    specs = plan_probe(cfg)
    with RunStore.open(tmp_path_factory.mktemp("probe") / "run") as store:
        store.add_items(specs)
        yield specs, store


@SETTINGS
@given(data=st.data(), batch=BATCH)
def test_probe_conversations_end_ok_or_failed(
    data: st.DataObject, batch: str, replier: Replier, probe_specs: tuple[Any, RunStore]
) -> None:
    from clearsight.probe import unit
    from clearsight.probe.plan import ProbeUnit

    specs, store = probe_specs
    for spec in specs:
        unit._SENSORS.clear()  # a fresh sensor each time (it keeps its backend)
        replier.data, replier.batch, replier.drawn = data, batch, []
        records = unit.run_probe_unit(ProbeUnit(spec))
        _check_stored(replier, store, records, [spec.key])
