"""The probe's typed item specs: each stores the JSON the untyped specs stored, under the same key
(``content_hash([kind, spec])``, the recipe every probe kind always used)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clearsight.probe.bench.protocol import BuildConfig, _plan
from clearsight.probe.config import ProbeConfig
from clearsight.probe.instances import Instance, bundled_instances
from clearsight.probe.plan import plan_probe
from clearsight.probe.records import transcript_spec
from clearsight.probe.specs import (
    BELIEF_PROTOCOL,
    BUILD_PROTOCOL,
    PROTOCOL,
    QTYPE_PROTOCOL,
    BeliefSpec,
    BuildSpec,
    ConversationSpec,
    DirectSpec,
    ProbeSpec,
    QueryTypeSpec,
    TranscriptSpec,
)
from clearsight.probe.strategies import prompt_hash
from clearsight.probe.transcript import Transcript
from clearsight.seeding import content_hash
from clearsight.specs import Spec, json_key, spec_class
from clearsight.validate import InputError

DRINK = {
    "id": "bundled/coffee-drink",
    "image": "bundled:skimage-coffee",
    "question": "What drink is in the cup?",
    "options": ["orange juice", "coffee", "water", "beer"],
    "gold": "B",
    "dataset": "bundled",
    "category": "identity",
}


def _same_key_as_before(spec: Spec) -> None:
    """The spec's key is the pre-typed recipe over its JSON, and json_key of the stored JSON;
    the JSON survives a round trip through text unchanged."""
    stored = json.loads(json.dumps(spec.to_json()))
    assert stored == spec.to_json()
    assert spec.key == content_hash([spec.kind, stored]) == json_key(spec.kind, stored)


def _config(**kw: Any) -> ProbeConfig:
    fields: dict[str, Any] = {
        "instance_ids": ("bundled/coffee-drink",),
        "reasoners": ("hf:a",),
        "reasoner_options": {"hf:a": {"device": "cpu"}},
        "strategies": ("direct", "bp"),
        "sensor_options": {"x": 1},
        "runs": 1,
    }
    return ProbeConfig(**{**fields, **kw})


def test_planned_conversations_store_the_json_they_always_did() -> None:
    # the limits every run had before they were per model: 128 / 48 tokens, 24,000 characters
    # ((8128 - 128) x 3); stated, a run plans the items it always did
    old = {"max_new_tokens": 128, "sensor_max_new_tokens": 48, "context_tokens": 8128}
    direct, bp = plan_probe(_config(**old))
    assert isinstance(direct, DirectSpec)
    assert isinstance(bp, ConversationSpec)
    sensing = {
        "instance": DRINK,
        "sensor": "perceiver",
        "sensor_options": {"x": 1},
        "sensor_max_new_tokens": 48,
        "temperature": 1.0,
        "seed": 0,
    }
    assert direct.to_json() == {
        **sensing,
        "strategy": "direct",
        "reasoner": "vlm",
        "k": 1,
        "signal": "none",
        "run": 0,
        "prompt": prompt_hash("direct"),
    }
    assert bp.to_json() == {
        **sensing,
        "strategy": "bp",
        "reasoner": "hf:a",
        "reasoner_options": {"device": "cpu"},
        "k": 5,
        "judge": "embedding",
        "budget": 100,
        "signal": "true",
        "run": 0,
        "max_new_tokens": 128,
        "context_chars": 24_000,
        "prompt": prompt_hash("bp"),
    }
    for spec in (direct, bp):
        assert spec.kind == PROTOCOL
        assert spec.instance == Instance.from_json(DRINK)
        _same_key_as_before(spec)


def test_plan_keys_are_stable_and_distinct() -> None:
    config = _config(
        instance_ids=None,
        limit=3,
        reasoners=("hf:a", "hf:b"),
        strategies=("direct", "react", "bp"),
        signals=("true", "random"),
        runs=2,
    )
    specs = plan_probe(config)
    # 3 instances x 2 runs x (direct + 2 strategies x 2 reasoners x 2 signals)
    assert len(specs) == 3 * 2 * (1 + 2 * 2 * 2)
    keys = [s.key for s in specs]
    assert len(set(keys)) == len(keys)
    assert [s.key for s in plan_probe(config)] == keys  # a replan finds the same items
    for spec in specs:
        _same_key_as_before(spec)
    reseeded = [s.key for s in plan_probe(config.model_copy(update={"seed": 1}))]
    assert not set(reseeded) & set(keys)  # the seed is part of every item


def test_a_direct_spec_fixes_what_the_baseline_is() -> None:
    inst = bundled_instances()[0]
    spec = DirectSpec(
        instance=inst,
        sensor="s",
        sensor_max_new_tokens=8,
        temperature=0.5,
        seed=3,
        run=1,
        prompt="p",
    )
    assert (spec.strategy, spec.reasoner, spec.k, spec.signal) == ("direct", "vlm", 1, "none")
    with pytest.raises(TypeError):
        DirectSpec(  # type: ignore[call-arg]
            instance=inst,
            sensor="s",
            sensor_max_new_tokens=8,
            temperature=0.5,
            seed=3,
            run=1,
            prompt="p",
            k=5,
        )


def test_a_transcript_spec_is_its_identifying_fields() -> None:
    inst = Instance.from_json(DRINK)
    t = Transcript.start(inst, reasoner="hf:x", strategy="bp", sensor="s", run=2, k=3, budget=7)
    identity = {
        "instance_id": "bundled/coffee-drink",
        "reasoner": "hf:x",
        "strategy": "bp",
        "sensor": "s",
        "run": 2,
        "k": 3,
        "budget": 7,
        "signal": "true",
    }
    plain = transcript_spec(t)
    assert plain.to_json() == identity  # no seed, judge or session: absent, not null
    session = transcript_spec(
        Transcript.start(
            inst,
            reasoner="human:bo",
            strategy="human",
            sensor="s",
            run=2,
            k=3,
            budget=7,
            meta={"session": "abc"},
        )
    )
    assert session.to_json() == {
        **identity,
        "reasoner": "human:bo",
        "strategy": "human",
        "session": "abc",
    }
    served = transcript_spec(t, seed=4, judge="exact")
    assert served.to_json() == {**identity, "seed": 4, "judge": "exact"}
    keys = set()
    for spec in (plain, session, served):
        assert spec.kind == PROTOCOL
        _same_key_as_before(spec)
        again = TranscriptSpec.from_json(json.loads(json.dumps(spec.to_json())))
        assert (again, again.key) == (spec, spec.key)
        keys.add(spec.key)
    assert len(keys) == 3
    with pytest.raises(InputError, match="not the spec of a stored transcript"):
        TranscriptSpec.from_json({**identity, "instance": DRINK})


def test_analysis_specs_name_their_transcript_judge_and_prompt() -> None:
    fields = {"transcript": "k" * 64, "judge": "hf:j", "prompt": "p" * 64}
    belief, qtype = BeliefSpec(**fields), QueryTypeSpec(**fields)
    assert belief.to_json() == qtype.to_json() == fields
    assert (
        (belief.kind, qtype.kind)
        == (BELIEF_PROTOCOL, QTYPE_PROTOCOL)
        == (
            "probe.belief",
            "probe.qtype",
        )
    )
    for spec in (belief, qtype):
        _same_key_as_before(spec)
    assert belief.key != qtype.key  # the kind is part of the key


def test_build_specs_store_the_json_they_always_did() -> None:
    config = BuildConfig(
        instance_ids=("bundled/coffee-drink", "bundled/coffee-cup-count"),
        sensor="hf:v",
        sensor_options={"y": 2},
        samples=9,
        temperature=0.7,
        seed=5,
    )
    first, second = _plan(config)
    assert first.to_json() == {
        "instance": DRINK,
        "sensor": "hf:v",
        "sensor_options": {"y": 2},
        "samples": 9,
        "temperature": 0.7,
        "prompt": prompt_hash("direct"),
        "seed": 5,
    }
    assert second.instance.id == "bundled/coffee-cup-count"
    assert first.kind == BUILD_PROTOCOL == "probe.build"
    for spec in (first, second):
        _same_key_as_before(spec)
    assert first.key != second.key
    assert [s.key for s in _plan(config)] == [first.key, second.key]


def test_each_kind_has_its_registered_class() -> None:
    assert spec_class(PROTOCOL) is ProbeSpec
    assert spec_class(BELIEF_PROTOCOL) is BeliefSpec
    assert spec_class(QTYPE_PROTOCOL) is QueryTypeSpec
    assert spec_class(BUILD_PROTOCOL) is BuildSpec
    for cls in (DirectSpec, ConversationSpec, TranscriptSpec):
        assert issubclass(cls, ProbeSpec)
        assert cls.kind == PROTOCOL


def test_a_unit_holds_its_typed_spec(tmp_path: Path) -> None:
    import pickle

    from clearsight.probe.plan import ProbeUnit

    direct, bp = plan_probe(_config(budget=9))
    units = [ProbeUnit(direct), ProbeUnit(bp)]
    assert [u.keys for u in units] == [(direct.key,), (bp.key,)]
    assert [u.cost for u in units] == [1.0, 9.0]
    back = pickle.loads(pickle.dumps(units[1]))
    assert (back.spec, back.key) == (bp, bp.key)


def test_an_unquoted_yaml_true_is_the_true_signal(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "abl.yaml"
    path.write_text("signals: [true, none, random]\nlimit: 2\n")
    assert yaml.safe_load(path.read_text())["signals"][0] is True  # what YAML gives
    assert ProbeConfig(**yaml.safe_load(path.read_text())).signals == ("true", "none", "random")
    with pytest.raises(ValueError, match="signals"):
        ProbeConfig(signals=[False])
