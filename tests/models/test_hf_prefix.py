"""One vision encode per distinct image in the ``hf`` backend (:mod:`clearsight.models.hf_prefix`):
the batching plan, the prompt split, the same replies with and without sharing over the families
that share, and a sweep's records unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearsight.models import Decoding, Message, Request
from clearsight.models.families import Family
from clearsight.tasks import identification_question

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from clearsight.models import hf_prefix  # noqa: E402
from clearsight.models.hf import make_hf  # noqa: E402
from clearsight.models.hf_backend import HfBackend  # noqa: E402

#: Shared against unshared: the same tokens at the same positions, other shapes of the matrix
#: products (as batched against alone, measured at most 2.9e-6 relative over the families).
SHARE_RTOL = 1e-4

#: The families whose prompts share their image prefix.
SHARING = ("idefics3", "smolvlm2", "qwen2vl", "qwen3_vl", "internvl", "llava", "llava_onevision")
#: Families never split, and why (the family table's rows).
NOT_SHARING = ("gemma3", "mllama", "paligemma", "qwen3_5", "llama")


def test_plan_groups_whole_groups_to_a_batch_and_buckets_by_length() -> None:
    lengths = [50, 10, 12, 30, 11, 31, 5, 7]
    keys: list[str | None] = ["b", "a", "a", "c", "a", "c", None, None]
    chunks = hf_prefix.plan_chunks(lengths, keys, batch_size=4)
    assert [c.groups for c in chunks] == [((1, 4, 2),), ((3, 5),), ((6,), (7,), (0,))]
    assert [c.shared for c in chunks] == [True, True, False]  # a group of one is not split
    every = sorted(i for c in chunks for i in c.indices)
    assert every == list(range(len(lengths)))


def test_a_group_larger_than_the_batch_is_a_batch_of_its_own() -> None:
    chunks = hf_prefix.plan_chunks([1] * 5 + [2], ["a"] * 5 + ["b"], batch_size=2)
    assert [c.groups for c in chunks] == [((0, 1, 2, 3, 4),), ((5,),)]
    assert [c.shared for c in chunks] == [True, False]


def test_only_causal_families_without_per_token_inputs_share() -> None:
    assert Family().shares_prefix
    assert not Family(masked_scoring="bidirectional prefix").shares_prefix
    assert not Family(bidirectional_image=frozenset({"full_attention"})).shares_prefix
    assert not Family(per_token_inputs=("cross_attention_mask",)).shares_prefix


@pytest.fixture(scope="module")
def built(hf_models_dir: Path, smollm2_path: Path) -> dict[str, HfBackend]:
    from fixtures.hf_tiny import TINY_KINDS, build_tiny

    out = {}
    for kind in (*SHARING, *NOT_SHARING):
        path = hf_models_dir / f"tiny-{kind}"
        if not (path / "config.json").is_file():
            build_tiny(kind, path, smollm2_path, seed=TINY_KINDS.index(kind))  # type: ignore[arg-type]
        out[kind] = make_hf(str(path), {"batch_size": 4})
    return out


def _requests() -> list[Request]:
    """Per image: letters with and without the abstain option, a generated reply, candidates
    with multi-token and prefix spellings ("1" and "10") after a longer question."""
    rng = np.random.default_rng(0)
    prior = {"dog": 0.3, "cat": 0.3, "car": 0.2, "bus": 0.1, "cup": 0.1}
    out = []
    for k in range(3):
        image = (rng.random((48, 80, 3)) * 255).astype(np.uint8)
        for abstain in ("reason", None):
            q = identification_question("dog", prior, np.random.default_rng(k), abstain=abstain)
            ask = (Message.user(image, q.prompt),)
            out.append(Request(ask, candidates=q.letters, generate=False))
        say = (Message.user(image, "Name it in one word."),)
        out.append(Request(say, Decoding(max_new_tokens=4, temperature=1.0, seed=k), n=2))
        many = (Message.user(image, "How many? " * (k + 1)),)
        out.append(Request(many, candidates=("10", "1", "yes"), generate=False))
    return out


def _pixel_rows(backend: HfBackend, requests: list[Request]) -> tuple[list[Any], int]:
    """The replies and how many images reached the model (rows of ``pixel_values``)."""
    rows = 0

    def hook(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        nonlocal rows
        pixels = kwargs.get("pixel_values")
        if pixels is not None:
            rows += int(pixels.shape[0])

    handle = backend.model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        return backend.complete(requests), rows
    finally:
        handle.remove()


@pytest.mark.parametrize("kind", SHARING)
def test_shared_prefixes_give_the_unshared_replies_with_one_encode_per_image(
    built: dict[str, HfBackend], kind: str
) -> None:
    backend = built[kind]
    requests = _requests()
    shared, shared_rows = _pixel_rows(backend, requests)
    hf_prefix.ENABLED = False
    try:
        plain, plain_rows = _pixel_rows(backend, requests)
    finally:
        hf_prefix.ENABLED = True
    assert shared_rows * len(requests) == plain_rows * 3  # 3 distinct images, 12 requests
    for a, b in zip(plain, shared, strict=True):
        assert a.texts == b.texts
        assert a.usage == b.usage
        assert b.usage["images"] == 1
        assert b.usage["prompt_tokens"] > 0
        assert b.latency_s > 0
        assert (a.candidate_probs is None) == (b.candidate_probs is None)
        if a.candidate_probs is not None:
            assert b.candidate_probs is not None
            got = [b.candidate_probs[c] for c in a.candidate_probs]
            np.testing.assert_allclose(got, list(a.candidate_probs.values()), rtol=SHARE_RTOL)


@pytest.mark.parametrize("kind", NOT_SHARING)
def test_families_that_cannot_share_are_never_split(built: dict[str, HfBackend], kind: str) -> None:
    backend = built[kind]
    assert backend._placeholder_id is None
    items = [backend._item(r) for r in _requests()[:2]]  # one image, two questions
    assert backend._groups(items) == ([None, None], [None, None])


@pytest.mark.parametrize("kind", [*SHARING, *NOT_SHARING])
def test_the_plan_counts_encodes_as_the_loaded_backend_does_them(
    built: dict[str, HfBackend], hf_models_dir: Path, kind: str
) -> None:
    from clearsight.models.hf import vision_encoding

    backend = built[kind]
    want = "shared" if backend._placeholder_id is not None else "per item"
    if backend.family.model_type == "llama":  # a text-only model drops the images
        want = "none"
    assert vision_encoding(str(hf_models_dir / f"tiny-{kind}"), {}) == want
    assert (want == "shared") == (kind in SHARING)


def test_a_request_alone_or_with_an_image_of_its_own_is_not_split(
    built: dict[str, HfBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = built["idefics3"]
    calls: list[str] = []
    split = hf_prefix.split_prompt

    def counted(tokenizer: object, placeholder: int, prompt: str) -> object:
        calls.append(prompt)
        return split(tokenizer, placeholder, prompt)

    monkeypatch.setattr(hf_prefix, "split_prompt", counted)
    requests = _requests()  # four questions on each of three images
    backend.complete(requests[:1])
    backend.complete([requests[0], requests[4], requests[8]])
    assert calls == []  # no other request of its call shows its image: nothing to share
    backend.complete(requests[:2])
    assert len(calls) == 2


def test_a_prompt_splits_after_its_last_image_into_halves_that_tokenize_as_the_whole(
    built: dict[str, HfBackend],
) -> None:
    backend = built["idefics3"]
    item = backend._item(_requests()[0])
    assert backend._placeholder_id is not None
    split = hf_prefix.split_prompt(backend.tokenizer, backend._placeholder_id, item.prompt)
    assert split is not None
    assert split.prefix.endswith("<image>")
    assert item.prompt == split.prefix + backend.tokenizer.decode(list(split.suffix_ids))
    assert hf_prefix.split_prompt(backend.tokenizer, 49999999, item.prompt) is None


@pytest.mark.slow
def test_a_sweeps_records_are_the_same_with_and_without_shared_prefixes(
    tiny_idefics3_path: Path, tmp_path: Path
) -> None:
    from clearsight.store import load_run
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import run_sweep

    cfg = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee"),
        models=(f"hf:{tiny_idefics3_path}",),
        wordings=("mcq.reason", "mcq.generic", "verbal.plain"),
        controls=("clean", "blank"),
        arms=("fog",),
        levels_m=(62.5, 1.953125),
    )
    runs = {}
    for enabled in (True, False):
        hf_prefix.ENABLED = enabled
        try:
            run_sweep(cfg, tmp_path / str(enabled), progress=False)
        finally:
            hf_prefix.ENABLED = True
        frame = load_run(tmp_path / str(enabled), include_raw=True)
        runs[enabled] = frame[frame.protocol == "sweep"].set_index("key").sort_index()
    shared, plain = runs[True], runs[False]
    assert list(shared.index) == list(plain.index)
    assert (shared.status == "ok").all()
    assert (plain.status == "ok").all()
    assert list(shared.answer) == list(plain.answer)
    for col in ("internal_conf", "letter_mass"):
        both = shared[col].notna()
        assert (both == plain[col].notna()).all()
        np.testing.assert_allclose(shared[col][both], plain[col][both], rtol=SHARE_RTOL)
    texts = [json.loads(r)["texts"] for r in shared.raw]
    assert texts == [json.loads(r)["texts"] for r in plain.raw]
