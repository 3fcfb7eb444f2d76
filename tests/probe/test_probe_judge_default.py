"""The judge behind u (issue 46 item 2): the LLM judge of semantic equivalence — the paper's
kind — wherever a judge model is configured; the embedding judge otherwise, named in the
manifest and the report as clearsight's cheap alternative."""

from __future__ import annotations

from clearsight.probe.config import ProbeConfig
from clearsight.probe.judges import judge_manifest
from clearsight.probe.plan import plan_probe
from clearsight.probe.protocol import PROBE
from clearsight.probe.specs import ConversationSpec

_ONE = {"instance_ids": ("bundled/coffee-drink",), "strategies": ("bp",), "runs": 1}


def test_a_configured_judge_model_makes_the_llm_judge_the_default() -> None:
    config = ProbeConfig(**_ONE, judge_model="hf:smollm2-135m")
    assert config.judge == "llm:hf:smollm2-135m"
    (spec,) = plan_probe(config)
    assert isinstance(spec, ConversationSpec)
    assert spec.judge == "llm:hf:smollm2-135m"
    manifest = PROBE.manifest(config, [spec])
    assert manifest["judge"] == {
        "spec": "llm:hf:smollm2-135m",
        "kind": "llm (the paper's kind)",
        "statement": judge_manifest("llm:hf:smollm2-135m")["statement"],
    }
    # the judge model must load with the run's other models
    assert ("hf:smollm2-135m", "the judge") in [(n.name, n.purpose) for n in PROBE.models(config)]


def test_without_a_judge_model_the_embedding_judge_is_named_as_clearsights() -> None:
    config = ProbeConfig(**_ONE)
    assert config.judge == "embedding"
    manifest = PROBE.manifest(config, list(plan_probe(config)))
    named = manifest["judge"]
    assert named["kind"] == "clearsight's cheap alternative"
    assert "clearsight's cheap alternative, not the paper's judge" in named["statement"]
    # the dump of a config without a judge model is the one stored before the field existed
    assert "judge_model" not in config.model_dump(mode="json")


def test_an_explicit_judge_wins_over_the_judge_model() -> None:
    config = ProbeConfig(**_ONE, judge_model="hf:smollm2-135m", judge="embedding:0.7")
    assert config.judge == "embedding:0.7"
    assert ProbeConfig(**_ONE, judge_model="hf:x", judge=None).judge == "llm:hf:x"  # type: ignore[arg-type]
