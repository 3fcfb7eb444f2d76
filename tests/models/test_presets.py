"""Presets of the studies' models: the table, the one resolution of a model's options, and the
options and manifest a real run gets (the hf factory replaced by a recording stand-in, so no
weights are needed)."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from clearsight.models import Capabilities, Request, Response, attention, shared_backend
from clearsight.models.hf_options import HfOptions
from clearsight.models.presets import Preset, find_preset, presets
from clearsight.models.resolve import applied_presets, backend_options, resolve_options
from clearsight.models.vllm import VLLMOptions
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep
from clearsight.validate import InputError

QWEN8 = "Qwen/Qwen3-VL-8B-Instruct"

#: The models the three studies name, by hub id (VL-Calibration is not on the hub).
STUDIES = {
    "Qwen/Qwen3-VL-2B-Instruct",
    "Qwen/Qwen3-VL-4B-Instruct",
    QWEN8,
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "OpenGVLab/InternVL3_5-2B-HF",
    "OpenGVLab/InternVL3_5-8B-HF",
    "google/gemma-3n-E2B-it",
    "HuggingFaceTB/SmolVLM2-2.2B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
}


def test_the_table_holds_the_studies_models_with_options_each_backend_accepts() -> None:
    table = presets()
    assert {p.hub_id for p in table} >= STUDIES
    assert {"vl-calibration-4b", "vl-calibration-8b"} <= {p.name for p in table}
    assert len({p.name for p in table}) == len(table)
    for p in table:
        HfOptions(**p.hf)  # extra="forbid": an option the backend does not know fails here
        VLLMOptions(**p.vllm)
        assert p.hf["dtype"] == "bfloat16"
        assert (p.hf.get("kind") == "text") == (p.kind == "text")
        weights_gib = p.params_b * 1e9 * 2 / 2**30
        assert weights_gib + 2 < p.gpu_gib <= math.ceil(1.3 * weights_gib + 3)


def test_an_option_the_backend_does_not_take_is_refused_by_the_table() -> None:
    fields = {"hub_id": "x/y", "family": "f", "kind": "vlm", "protocols": ["sweep"]}
    fields |= {"params_b": 1.0, "backend": "hf", "vllm": {}}
    with pytest.raises(ValidationError, match="max_pixels: unknown field"):
        Preset(name="bad", hf={"max_pixels": 1000}, **fields)
    with pytest.raises(ValidationError, match="attn_implementation"):
        Preset(name="bad", hf={"attn_implementation": "flash"}, **fields)


def test_a_hub_id_gets_its_preset_for_its_backend_and_the_runs_options_win() -> None:
    hf = resolve_options(f"hf:{QWEN8}", {"batch_size": 2, "device": "cuda"})
    assert hf == {
        "dtype": "bfloat16",
        "attn_implementation": "sdpa",
        "batch_size": 2,
        "max_image_side": 1280,
        "device": "cuda",
        "preset": "qwen3-vl-8b",
    }
    vllm = resolve_options(f"vllm:{QWEN8}")
    assert vllm == {**find_preset("qwen3-vl-8b").vllm, "preset": "qwen3-vl-8b"}  # type: ignore[union-attr]
    assert backend_options(f"hf:{QWEN8}", {"batch_size": 2})["batch_size"] == 2
    assert "preset" not in backend_options(f"hf:{QWEN8}")


def test_a_local_copy_names_its_preset_and_none_turns_presets_off() -> None:
    local = resolve_options("hf:/data/vlcal", {"preset": "vl-calibration-4b", "dtype": "float16"})
    assert local["preset"] == "vl-calibration-4b"
    assert local["dtype"] == "float16"
    assert local["batch_size"] == 16
    off = resolve_options(f"hf:{QWEN8}", {"preset": "none", "batch_size": 3})
    assert off == {"preset": None, "batch_size": 3}
    assert backend_options(f"hf:{QWEN8}", {"preset": None}) == {}
    by_hub_id = resolve_options("hf:/data/q", {"preset": QWEN8})
    assert by_hub_id["preset"] == "qwen3-vl-8b"


def test_models_without_a_preset_keep_their_options_unchanged() -> None:
    for model in ("observer", "hf:smollm2-135m", "hf:/tmp/x", "openai:http://h/v1#Qwen/Qwen3-8B"):
        assert resolve_options(model, {"batch_size": 4}) == {"batch_size": 4}
    assert resolve_options("scripted:a.jsonl") == {}


def test_a_bad_preset_name_or_a_preset_on_another_backend_is_one_error() -> None:
    with pytest.raises(InputError, match=r"unknown preset 'qwen9' .*known presets: qwen3-vl-2b"):
        resolve_options("hf:/x", {"preset": "qwen9"})
    with pytest.raises(InputError, match="presets serve hf: and vllm: models"):
        resolve_options("openai:http://h/v1#m", {"preset": "qwen3-vl-8b"})
    with pytest.raises(InputError, match="unknown preset 3"):
        resolve_options("hf:/x", {"preset": 3})


_values = st.one_of(st.integers(1, 64), st.sampled_from(["float16", "cuda", "eager"]), st.none())
_options = st.dictionaries(
    st.sampled_from(["batch_size", "dtype", "device", "attn_implementation", "max_image_side"]),
    _values,
    max_size=4,
)
_models = st.sampled_from(
    [f"hf:{QWEN8}", f"vllm:{QWEN8}", "hf:google/gemma-3n-E2B-it", "hf:/local", "observer"]
)
_presets = st.sampled_from([None, "none", "smolvlm2-2.2b", "qwen2.5-7b"])


@given(model=_models, options=_options, preset=_presets)
def test_resolution_is_idempotent_and_the_given_options_always_win(
    model: str, options: dict[str, Any], preset: str | None
) -> None:
    plain = preset is None or model == "observer"
    given_ = dict(options) if plain else {**options, "preset": preset}
    once = resolve_options(model, given_)
    assert resolve_options(model, once) == once
    assert all(once[k] == v for k, v in options.items())
    assert backend_options(model, once) == backend_options(model, given_)


def _one_item_sweep(model: str, options: dict[str, Any] | None = None) -> SweepConfig:
    """A sweep of ``model`` on one scene, clean and at one fog level, one question wording."""
    return SweepConfig(
        scene_ids=("skimage-chelsea",),
        arms=("fog",),
        levels_m=(15.625,),
        controls=("clean",),
        tasks=("identify",),
        wordings=("mcq.reason",),
        models=(model,),
        model_options={} if options is None else {model: options},
    )


class _Recorder:
    """Stands in for an hf model: answers A with certainty and records its options."""

    loaded: list[tuple[str, dict[str, Any]]] = []  # noqa: RUF012 - the test reads it

    def __init__(self, arg: str, options: dict[str, Any]) -> None:
        self.name = f"hf:{arg}"
        self.capabilities = Capabilities(images=True, candidate_probs=True)
        _Recorder.loaded.append((arg, dict(options)))

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        return [
            Response(texts=(), candidate_probs=dict.fromkeys(r.candidates, 0.0) | {"A": 1.0})
            for r in requests
        ]


def test_a_sweep_runs_the_preset_options_keys_its_items_by_them_and_records_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.models.hf as hf
    from clearsight.store import RunStore

    monkeypatch.setattr(hf, "make_hf", _Recorder)
    _Recorder.loaded.clear()
    model = f"hf:{QWEN8}"
    cfg = _one_item_sweep(model, {"batch_size": 2})
    summary = run_sweep(cfg, tmp_path / "run", progress=False)
    assert summary.failed == 0
    assert summary.ok > 0
    want = {
        "dtype": "bfloat16",
        "attn_implementation": "sdpa",
        "batch_size": 2,
        "max_image_side": 1280,
    }
    assert _Recorder.loaded == [(QWEN8, want)]  # loaded once, with the preset under the run's
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        manifest = store.manifest()
        specs = [r.spec for r in store.iter_records(raw=False) if r.spec.get("model") == model]
    assert manifest["presets"] == {model: {"preset": "qwen3-vl-8b", "options": want}}
    assert manifest["config"]["model_options"] == {model: {"batch_size": 2}}  # as given
    assert specs
    assert all(s["model_options"] == {**want, "preset": "qwen3-vl-8b"} for s in specs)
    shared_backend(model, {"batch_size": 2})  # the run's own backend, not loaded again
    assert len(_Recorder.loaded) == 1


def test_applied_presets_name_only_the_models_a_preset_applies_to() -> None:
    got = applied_presets([("observer", {}), (f"vllm:{QWEN8}", {"max_model_len": 4096})])
    assert list(got) == [f"vllm:{QWEN8}"]
    assert got[f"vllm:{QWEN8}"]["options"]["max_model_len"] == 4096


# --------------------------------------------------------------------------------------------
# the attention kernel: the family's for a new run, eager for a run stored before
# --------------------------------------------------------------------------------------------


def _checkpoint(root: Path, model_type: str) -> str:
    """An ``hf:`` model whose directory holds only a config of ``model_type`` (the recording
    stand-in loads it; a plan reads the config)."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"model_type": model_type}))
    return f"hf:{root}"


def test_a_new_run_fills_in_the_family_s_attention_where_the_options_name_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from clearsight.models import families

    llama = _checkpoint(tmp_path / "llama", "llama")
    monkeypatch.setitem(families.FAMILIES, "fam", replace(families.Family(), attention="eager"))
    eager_family = _checkpoint(tmp_path / "fam", "fam")
    with attention.by_family(True):
        assert resolve_options(llama, {}) == {"attn_implementation": "sdpa"}
        assert resolve_options(llama, {"attn_implementation": "eager"}) == {
            "attn_implementation": "eager"  # the run's own choice wins
        }
        assert resolve_options(eager_family, {}) == {}  # absent means eager
        assert resolve_options("observer", {}) == {}
        assert resolve_options("hf:not/cached-anywhere", {}) == {}  # no config: as before
        assert backend_options(f"hf:{QWEN8}", {})["attn_implementation"] == "sdpa"  # preset
    assert resolve_options(llama, {}) == {}  # outside a run that fills it in
    with attention.by_family(False):
        assert resolve_options(llama, {}) == {}


def test_which_runs_fill_in_the_family_s_attention() -> None:
    assert attention.run_rule(None)  # a new run
    assert attention.run_rule({"config": {}, "attention": "by family"})
    assert not attention.run_rule({"config": {}})  # stored before the rule
    with attention.by_family(False):  # a new run made as one stored before
        assert not attention.run_rule(None)
        assert attention.run_rule({"attention": "by family"})


def _resume(run: Path, model: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Resume the sweep stored in ``run`` in what is to it a new process (its plan forgotten,
    so it plans and loads again); :func:`_stored`."""
    from clearsight.models import registry

    with sqlite3.connect(run / "run.sqlite") as conn:
        conn.execute("DELETE FROM manifest WHERE key = 'plan'")
    monkeypatch.setattr(registry, "_SHARED", {})
    _Recorder.loaded.clear()
    assert run_sweep(_one_item_sweep(model), run, progress=False).failed == 0
    return _stored(run, model)


def _stored(run: Path, model: str) -> dict[str, Any]:
    """The run's items' options of ``model``, the options the run loaded ``model`` with, the
    manifest's attention entry and the number of items."""
    from clearsight.store import RunStore

    with RunStore.open(run, read_only=True) as store:
        specs = [r.spec for r in store.iter_records(raw=False) if r.spec.get("model") == model]
        return {
            "items": {json.dumps(s["model_options"], sort_keys=True) for s in specs},
            "loaded": [options for _, options in _Recorder.loaded],
            "entry": store.manifest().get("attention"),
            "n": store.counts()["items"],
        }


def test_a_new_run_records_its_attention_and_one_stored_before_resumes_with_eager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new run's items and loaded model name the family's sdpa, and its manifest says so;
    resumed, it plans the same items. A run stored before (made here as one: options without
    the field) resumes with eager: the same items, the model loaded without the field (eager),
    and no manifest entry that would make a later resume fill it in."""
    import clearsight.models.hf as hf
    from clearsight.models import registry

    monkeypatch.setattr(hf, "make_hf", _Recorder)
    monkeypatch.setattr(registry, "_SHARED", {})
    model = _checkpoint(tmp_path / "llama", "llama")
    _Recorder.loaded.clear()
    run_sweep(_one_item_sweep(model), tmp_path / "new", progress=False)
    new = _stored(tmp_path / "new", model)
    assert new["items"] == {'{"attn_implementation": "sdpa"}'}
    assert new["loaded"] == [{"attn_implementation": "sdpa"}]
    assert new["entry"] == "by family"
    assert _resume(tmp_path / "new", model, monkeypatch) == new

    _Recorder.loaded.clear()
    monkeypatch.setattr(registry, "_SHARED", {})
    with attention.by_family(False):
        run_sweep(_one_item_sweep(model), tmp_path / "old", progress=False)
    old = _stored(tmp_path / "old", model)
    assert old["items"] == {"{}"}
    assert old["loaded"] == [{}]
    assert HfOptions(**old["loaded"][0]).attn_implementation == "eager"
    assert old["entry"] is None
    assert old["n"] == new["n"]
    assert _resume(tmp_path / "old", model, monkeypatch) == old
    assert _resume(tmp_path / "old", model, monkeypatch) == old
