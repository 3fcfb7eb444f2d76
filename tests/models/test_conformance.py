"""Conformance of the ``hf`` backend over model families: the same checks for every family.

Each family is a tiny random checkpoint built offline from its transformers config, with the
family's chat-template conventions and special tokens reproduced as data
(:mod:`fixtures.hf_tiny`); each is built and loaded once per session. For every family:

* **load** — from a local directory, and by hub id with ``HF_HUB_OFFLINE=1`` from a Hugging
  Face cache laid out as the hub lays it out (``models--org--name/{blobs,snapshots,refs}``,
  checked by ``huggingface_hub.scan_cache_dir``; one subprocess with ``HF_HOME`` pointed at it);
* **letters** — the letter read-out of a sweep question (with and without the abstain option)
  takes one forward pass and equals the letter probabilities of a plain transformers forward
  pass over the unpadded prompt (the processor called here, the model choosing its own
  positions and masks);
* **batch** — prompts of different lengths (and image sizes) batched give what each gives
  alone (left padding, attention mask and positions right);
* **generate** — greedy generation equals ``model.generate``; a verbalized reply, steered token
  by token through the model's output layer, comes back as text and parses; ``n`` samples come
  from one prefill;
* **masked** — masked scoring (``HfBackend.score_hidden``, trajectory grounding: candidates
  in context at the end of a trajectory, its rationale hidden) equals deleting the hidden tokens
  while keeping every other token's position (the reference runs the shortened sequence through
  the model's own masking), or the family is refused before the run with the capability it
  lacks and the reason;
* **image** — the pixels that reach the model are what the family's processor makes of the
  original image at its own resolution, and the red box is among them.

:data:`EXPECTED` is the conformance table: every cell passes or names a refusal; the README's
table of families is rendered from it (:func:`test_readme_table_is_the_conformance_table`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearsight.grounding.confidence.elicit import Elicited, ElicitRequest, elicit
from clearsight.models import Decoding, Message, Request, TextPart, attention
from clearsight.models.base import Capabilities, HiddenRequest, HiddenScores, require
from clearsight.models.resolve import backend_options
from clearsight.physics.controls import draw_box
from clearsight.sweep.readouts import parse_verbalized, sweep_readouts
from clearsight.tasks import identification_question, verbalized_question
from clearsight.validate import InputError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from clearsight.models.hf import make_hf  # noqa: E402
from clearsight.models.hf_backend import HfBackend  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: The families, as the README names them, and the tiny checkpoint of each.
FAMILIES: dict[str, str] = {
    "llama": "Text LLM (Llama / SmolLM2)",
    "idefics3": "Idefics3 / SmolVLM",
    "smolvlm2": "SmolVLM2",
    "qwen2vl": "Qwen2-VL",
    "qwen2_5_vl": "Qwen2.5-VL",
    "qwen3_vl": "Qwen3-VL",
    "internvl": "InternVL (-hf)",
    "gemma3": "Gemma 3",
    "gemma4": "Gemma 4 (turn markers as Gemma 3's)",
    "gemma3n": "Gemma 3n (timm's MobileNetV5 tower)",
    "llava_onevision": "LLaVA-OneVision",
    "llava": "LLaVA-1.5",
    "mllama": "Mllama (Llama 3.2 Vision)",
    "paligemma": "PaliGemma",
    "qwen3_5": "Qwen3.5",
}
KINDS = tuple(FAMILIES)
VLM_KINDS = tuple(k for k in KINDS if k != "llama")

#: What each family has in the quirks table (``clearsight.models.families.FAMILIES``).
ROWS: dict[str, str] = {
    "gemma3": "image tokens attend each other both ways",
    "mllama": "`cross_attention_mask` carried to appended tokens",
    "paligemma": "masked scoring refused",
    "gemma4": "masked scoring refused",
}

#: The checks (columns of the conformance table).
CHECKS = ("load", "letters", "batch", "generate", "masked", "image")
HEADERS = {
    "load": "loads (directory; hub id offline)",
    "letters": "letter read-out = plain forward, one pass (± abstain)",
    "batch": "batch = alone",
    "generate": "verbalized generation; n samples, one prefill",
    "masked": "masked scoring (trajectory grounding)",
    "image": "image at the processor's resolution, box intact",
}
PASS = "passes"
#: Families whose masked scoring is refused, with what the refusal names.
MASK_REFUSED = {
    "paligemma": "refused: attention_mask (the whole prompt is one bidirectional prefix)",
    "qwen3_5": "refused: attention_mask (linear-attention layers carry hidden tokens forward)",
    "gemma4": "refused: attention_mask (its image attention is not reproduced)",
}
#: Families refused at load (checkpoints written as config only), with what the refusal names.
LOAD_REFUSED = {
    "phi4_multimodal": (
        "Phi-4-multimodal",
        "refused at load: a VLM transformers maps to a causal LM (it would drop every image)",
    ),
    "florence2": (
        "Florence-2",
        "refused at load: encoder-decoder (no faithful read-out path)",
    ),
}


def expected(kind: str, check: str) -> str:
    """The cell of the conformance table for ``kind`` and ``check``."""
    if check == "image" and kind == "llama":
        return "n/a (text only: images dropped and counted)"
    if check == "masked" and kind in MASK_REFUSED:
        return MASK_REFUSED[kind]
    return PASS


#: The conformance table: family -> check -> outcome.
EXPECTED = {kind: {check: expected(kind, check) for check in CHECKS} for kind in KINDS}

#: Relative tolerance between the backend's letter probabilities and a plain forward pass:
#: the same weights and tokens, but explicit position ids and a 2-D mask against the model's
#: defaults, so the two agree to float32 rounding (measured: at most 1.0e-6 over the families).
LETTER_RTOL = 1e-5
#: Batched against alone: padding changes the shapes of the matrix products (another
#: accumulation order) and adds padded keys as exact zeros (measured: at most 1.9e-6); another
#: CPU's BLAS kernels move such sums too, hence the margin.
BATCH_RTOL = 1e-4
#: Masked scoring against the shortened sequence: other shapes again; the same bound (dropping
#: Gemma 3's bidirectional image attention moves its scores by 3e-3 to 1e-2).
MASK_RTOL = 1e-4


def _image(seed: int, h: int = 48, w: int = 80) -> np.ndarray:
    return (np.random.default_rng(seed).random((h, w, 3)) * 255).astype(np.uint8)


def _boxed(seed: int, h: int = 60, w: int = 90) -> np.ndarray:
    """A random image with the sweep's red box around its middle third."""
    return draw_box(_image(seed, h, w), (w // 3, h // 3, 2 * w // 3, 2 * h // 3), thickness=3)


def _question(abstain: bool, seed: int = 0) -> Any:
    prior = {"dog": 0.3, "cat": 0.3, "car": 0.2, "bus": 0.1, "cup": 0.1}
    rng = np.random.default_rng(seed)
    return identification_question("dog", prior, rng, abstain="reason" if abstain else None)


def _letters_request(q: Any, image: np.ndarray | None) -> Request:
    content = () if image is None else (image,)
    return Request((Message.user(*content, q.prompt),), candidates=q.letters, generate=False)


# --------------------------------------------------------------------------------------------
# one checkpoint and one loaded backend per family for the whole session
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def family_paths(
    request: pytest.FixtureRequest, hf_models_dir: Path, smollm2_path: Path
) -> dict[str, Path]:
    """Every family's checkpoint directory, built once (the three ``test_hf`` also uses come
    from its session fixtures)."""
    from fixtures.hf_tiny import TINY_KINDS, build_tiny

    paths = {}
    for kind in KINDS:
        if kind in ("llama", "idefics3", "qwen2vl"):
            paths[kind] = request.getfixturevalue(f"tiny_{kind}_path")
        else:
            out = hf_models_dir / f"tiny-{kind}"
            paths[kind] = build_tiny(kind, out, smollm2_path, seed=TINY_KINDS.index(kind))
    return paths


def run_options(path: Path, **options: Any) -> dict[str, Any]:
    """The options a new run loads the checkpoint at ``path`` with: ``options`` and the
    attention kernel of its family (``clearsight.models.attention``)."""
    with attention.by_family(True):
        return backend_options(f"hf:{path}", options)


@pytest.fixture(scope="session")
def backends(family_paths: dict[str, Path], hub_run: HubRun) -> dict[str, HfBackend]:
    """Every family loaded from its directory as a new run loads it (its family's attention
    kernel; the hub-id loads run meanwhile)."""
    return {
        kind: make_hf(str(path), run_options(path, batch_size=8))
        for kind, path in family_paths.items()
    }


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def backend(kind: str, backends: dict[str, HfBackend]) -> HfBackend:
    return backends[kind]


class Calls:
    """The model's forward calls: prompt passes (more than one new token) and decode steps."""

    def __init__(self, model: Any) -> None:
        self.prefill_calls = self.prefill_rows = self.decode_calls = 0
        self.inputs: list[dict[str, Any]] = []
        self._handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        ids = kwargs["input_ids"]
        self.inputs.append(dict(kwargs))
        if ids.shape[1] > 1:
            self.prefill_calls += 1
            self.prefill_rows += ids.shape[0]
        else:
            self.decode_calls += 1

    def close(self) -> None:
        self._handle.remove()


@pytest.fixture
def calls(backend: HfBackend) -> Iterator[Calls]:
    c = Calls(backend.model)
    yield c
    c.close()


def _plain_inputs(backend: HfBackend, request: Request) -> dict[str, Any]:
    """The model inputs transformers' own processor (or tokenizer) makes of ``request``'s
    rendered prompt, unpadded."""
    prompt = backend.prompt_text(request)
    images = [im for m in request.messages for im in m.images]
    if not backend.capabilities.images:
        return dict(backend.tokenizer([prompt], return_tensors="pt", add_special_tokens=False))
    from PIL import Image

    kwargs: dict[str, Any] = {}
    if images:
        kwargs["images"] = [[Image.fromarray(im) for im in images]]
    enc = backend.inputs.processor(
        text=[prompt], return_tensors="pt", add_special_tokens=False, **kwargs
    )
    return {k: v for k, v in enc.items() if isinstance(v, torch.Tensor) and k != "labels"}


def _plain_logprobs(backend: HfBackend, inputs: dict[str, Any]) -> Any:
    """Next-token log-probabilities after a plain forward pass of ``inputs`` (positions and
    masks left to the model)."""
    with torch.no_grad():
        logits = backend.model(**inputs).logits[0, -1].float()
    return torch.log_softmax(logits, dim=-1)


def _letter_probs(backend: HfBackend, logp: Any, letters: tuple[str, ...]) -> dict[str, float]:
    """A letter's probability: the sum over its spellings "X" and " X" (single tokens here)."""
    out = {}
    for letter in letters:
        seqs = backend._candidate_seqs(letter)
        assert all(len(s) == 1 for s in seqs), (letter, seqs)
        out[letter] = float(sum(logp[s[0]].exp() for s in seqs))
    return out


# --------------------------------------------------------------------------------------------
# letters: one forward pass, equal to a plain forward pass
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("abstain", [False, True], ids=["no-abstain", "abstain"])
def test_letters(kind: str, backend: HfBackend, calls: Calls, abstain: bool) -> None:
    q = _question(abstain)
    image = _boxed(1) if backend.capabilities.images else None
    request = _letters_request(q, image)
    response = backend.complete([request])[0]
    assert (calls.prefill_calls, calls.prefill_rows, calls.decode_calls) == (1, 1, 0)
    assert response.candidate_probs is not None
    assert set(response.candidate_probs) == set(q.letters)
    assert len(q.letters) == 4 + abstain
    want = _letter_probs(
        backend, _plain_logprobs(backend, _plain_inputs(backend, request)), q.letters
    )
    for letter in q.letters:
        assert response.candidate_probs[letter] == pytest.approx(want[letter], rel=LETTER_RTOL)
    # the sweep's read-out of this raw response: the argmax letter, its renormalised mass
    readouts = sweep_readouts(q, response.to_json())
    assert readouts["answer"] == max(want, key=lambda k: want[k])
    assert readouts["letter_probs"] == pytest.approx(response.candidate_probs)


# --------------------------------------------------------------------------------------------
# batch: different lengths together give what each gives alone
# --------------------------------------------------------------------------------------------


def test_batch(kind: str, backend: HfBackend, calls: Calls) -> None:
    vlm = backend.capabilities.images
    texts = ["Short?", "A much longer question about the object inside the red box, please?"]
    requests = []
    for i in range(4):
        q = _question(abstain=i % 2 == 1, seed=i)
        image = _boxed(i, 40 + 20 * i, 110 - 15 * i) if vlm else None
        request = _letters_request(q, image)
        text = texts[i % 2] + " " + q.prompt
        requests.append(
            Request(
                (Message.user(*request.messages[0].images, text),),
                candidates=q.letters,
                generate=False,
            )
        )
    batched = backend.complete(requests)
    assert calls.prefill_calls == 1
    first = calls.inputs[0]
    lengths = first["attention_mask"].sum(dim=1)
    assert len(set(lengths.tolist())) > 1  # different lengths, left-padded
    assert bool((first["attention_mask"][:, -1] == 1).all())
    for request, got in zip(requests, batched, strict=True):
        alone = backend.complete([request])[0]
        assert got.candidate_probs == pytest.approx(alone.candidate_probs, rel=BATCH_RTOL)


# --------------------------------------------------------------------------------------------
# generate: greedy = model.generate, a verbalized reply parses, n samples share one prefill
# --------------------------------------------------------------------------------------------

REPLY = "Answer: B\nConfidence: 80"


class Steer:
    """Forces the model's next token, step by step, through its output layer: ``tokens[i]``
    gets a bonus of 1e4 logits on the i-th forward call."""

    def __init__(self, model: Any, tokens: list[int]) -> None:
        self.tokens = tokens
        self.step = 0
        self._handle = model.get_output_embeddings().register_forward_hook(self._hook)

    def _hook(self, module: Any, args: Any, output: Any) -> Any:
        if self.step >= len(self.tokens):
            return output
        steered = output.clone()
        steered[..., self.tokens[self.step]] += 1e4
        self.step += 1
        return steered

    def close(self) -> None:
        self._handle.remove()


def test_generate(kind: str, backend: HfBackend) -> None:
    # a small square image: one of Mllama's four tiles, the other three padding, which appended
    # tokens must not read (its cross_attention_mask carried over)
    image = _boxed(4, 32, 32) if backend.capabilities.images else None
    q = verbalized_question(_question(abstain=True), "verbal.plain.v1")
    request = Request(
        (Message.user(*(() if image is None else (image,)), q.prompt),), Decoding(max_new_tokens=8)
    )
    got = backend.complete([request])[0]
    inputs = _plain_inputs(backend, request)
    with torch.no_grad():
        ref = backend.model.generate(**inputs, max_new_tokens=8, do_sample=False)
    ref_tokens = [t for t in ref[0, inputs["input_ids"].shape[1] :].tolist()]
    if ref_tokens and ref_tokens[-1] in backend.eos_ids:
        ref_tokens = ref_tokens[:-1]
    assert got.texts[0] == backend.tokenizer.decode(ref_tokens, skip_special_tokens=True)

    # a reply steered token by token through the output layer comes back whole and parses
    ids = backend.tokenizer(REPLY, add_special_tokens=False)["input_ids"]
    steer = Steer(backend.model, [*ids, int(backend.tokenizer.eos_token_id)])
    try:
        steered = backend.complete([Request(request.messages, Decoding(max_new_tokens=40))])[0]
    finally:
        steer.close()
    assert steered.texts == (REPLY,)
    assert parse_verbalized(steered.texts[0], q.letters) == ("B", 0.8)
    assert sweep_readouts(q, steered.to_json())["verbal_conf"] == pytest.approx(0.8)


def test_n_samples_share_one_prefill(kind: str, backend: HfBackend, calls: Calls) -> None:
    image = _boxed(5) if backend.capabilities.images else None
    request = Request(
        (Message.user(*(() if image is None else (image,)), "Say something."),),
        Decoding(max_new_tokens=4, temperature=1.0, seed=3),
        n=4,
    )
    response = backend.complete([request])[0]
    assert len(response.texts) == 4
    assert len(set(response.texts)) > 1
    assert (calls.prefill_calls, calls.prefill_rows) == (1, 1)
    assert calls.decode_calls <= 3
    decode_rows = {c["input_ids"].shape[0] for c in calls.inputs[1:]}
    assert decode_rows <= {4}


# --------------------------------------------------------------------------------------------
# masked: score_hidden equals deleting the hidden tokens, positions kept, or a named refusal
# --------------------------------------------------------------------------------------------

RATIONALE = "I see a red box around a small brown dog sitting on the grass."

#: Model inputs with one entry per token (sliced with the tokens they belong to).
PER_TOKEN = ("mm_token_type_ids", "token_type_ids", "cross_attention_mask")


def _grounding_request(backend: HfBackend, candidates: tuple[str, ...]) -> HiddenRequest:
    """A trajectory ending at its answer slot, the rationale hidden (a VLM's question carries
    the boxed image)."""
    content = (_boxed(6),) if backend.capabilities.images else ()
    return HiddenRequest(
        (
            Message.user(*content, "What is in the box? Answer A, B, C or D."),
            Message("assistant", (TextPart(RATIONALE + " So the answer is C.\nLetter:"),)),
        ),
        candidates,
        hide=((0, len(RATIONALE)),),
    )


def _plain_request(hr: HiddenRequest) -> Request:
    return Request(hr.messages, candidates=hr.candidates, generate=False)


def _deleted_logprobs(
    backend: HfBackend, request: Request, span: tuple[int, int], extra: tuple[int, ...] = ()
) -> Any:
    """Next-token log-probabilities of the prompt with the tokens ``span`` deleted and every
    other token keeping its position id (the backend's positions of the unpadded prompt), then
    ``extra`` tokens appended at the following positions; a plain 2-D mask, the model building
    its own attention pattern from it."""
    batch = backend.encode([request])
    length = batch.input_ids.shape[1]
    keep = torch.tensor([i for i in range(length) if not span[0] <= i < span[1]])
    ids = batch.input_ids[:, keep]
    pos = batch.position_ids[..., keep]
    inputs = {k: v for k, v in batch.model_inputs.items() if k not in PER_TOKEN}
    per_token = {k: batch.model_inputs[k][:, keep] for k in PER_TOKEN if k in batch.model_inputs}
    if extra:
        ids = torch.cat([ids, torch.tensor([extra])], dim=1)
        steps = torch.arange(len(extra))[None] + batch.next_position[:, None]
        more = steps[None].expand(3, *steps.shape) if pos.ndim == 3 else steps
        pos = torch.cat([pos, more], dim=-1)
        per_token = {
            k: torch.cat([v, v[:, -1:].expand(-1, len(extra), *v.shape[2:])], dim=1)
            for k, v in per_token.items()
        }
    with torch.no_grad():
        out = backend.model(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            position_ids=pos,
            **inputs,
            **per_token,
        )
    return torch.log_softmax(out.logits[0, -1].float(), dim=-1)


def _deleted_sequence_probs(
    backend: HfBackend,
    hr: HiddenRequest,
    span: tuple[int, int],
    tokens: tuple[tuple[int, ...], ...],
) -> dict[str, float]:
    """Each candidate's in-context token sequence probability with the tokens ``span`` deleted
    (positions kept): the product of its tokens' probabilities, each after the ones before."""
    out = {}
    for candidate, seq in zip(hr.candidates, tokens, strict=True):
        p = 1.0
        for i, tok in enumerate(seq):
            p *= float(_deleted_logprobs(backend, _plain_request(hr), span, seq[:i])[tok].exp())
        out[candidate] = p
    return out


def _scores(backend: HfBackend, hr: HiddenRequest) -> HiddenScores:
    (scores,) = backend.score_hidden([hr])
    assert isinstance(scores, HiddenScores), scores
    return scores


def test_masked(kind: str, backend: HfBackend) -> None:
    hr = _grounding_request(backend, ("A", "B", "C", "D"))
    request = _plain_request(hr)
    if kind in MASK_REFUSED:
        assert not backend.capabilities.attention_mask
        reason = backend.lacking["attention_mask"]
        with pytest.raises(InputError, match=r"lacks attention_mask \(" + re.escape(reason)):
            require(backend, Capabilities(candidate_probs=True, attention_mask=True), "grounding")
        with pytest.raises(InputError, match="cannot score under a custom attention mask"):
            backend.score_hidden([hr])
        return
    assert backend.capabilities.attention_mask
    nothing = _scores(backend, replace(hr, hide=()))
    tokens = nothing.candidate_tokens
    plain = _deleted_sequence_probs(backend, hr, (0, 0), tokens)
    assert dict(nothing.sequence_probs) == pytest.approx(plain, rel=MASK_RTOL)

    start = backend.prompt_text(request).index(RATIONALE)
    (span,) = backend.hidden_token_ranges(request, [(start, start + len(RATIONALE))])
    got = _scores(backend, hr)
    assert got.hidden_tokens == span[1] - span[0]
    want = _deleted_sequence_probs(backend, hr, span, tokens)
    assert dict(got.sequence_probs) == pytest.approx(want, rel=MASK_RTOL)
    assert dict(got.sequence_probs) != pytest.approx(plain, rel=1e-3)  # the hidden text mattered

    # a two-token candidate ("10" = "1" then "0") continues under the same mask, and "1" ends
    multi = _grounding_request(backend, ("1", "10"))
    got10 = _scores(backend, multi)
    one, zero = got10.candidate_tokens[1]
    assert got10.candidate_tokens[0] == (one,)
    want10 = _deleted_sequence_probs(backend, multi, span, got10.candidate_tokens)
    assert dict(got10.sequence_probs) == pytest.approx(want10, rel=MASK_RTOL)
    p_zero = float(_deleted_logprobs(backend, _plain_request(multi), span, (one,))[zero].exp())
    assert got10.end_probs["1"] == pytest.approx(1 - p_zero, rel=MASK_RTOL)

    # trajectory grounding's own read-out (numerals 0-10 at the slot, their shared token path
    # appended in the same pass): a single-token numeral's probability is the deleted one's
    elicited = ElicitRequest(
        (hr.messages[0], Message("assistant", (TextPart(RATIONALE + " Confidence: "),))),
        hide=((0, len(RATIONALE)),),
    )
    (result,) = elicit(backend, [elicited])
    assert isinstance(result, Elicited), result
    slot = Request(elicited.messages, candidates=("7",), generate=False)
    start7 = backend.prompt_text(slot).index(RATIONALE)
    (span7,) = backend.hidden_token_ranges(slot, [(start7, start7 + len(RATIONALE))])
    assert result.hidden_tokens == span7[1] - span7[0]
    (seven,) = result.numeral_tokens[7]
    want7 = float(_deleted_logprobs(backend, slot, span7)[seven].exp())
    assert result.raw[7] == pytest.approx(want7, rel=MASK_RTOL)


def test_masks_keep_the_sliding_window(hf_models_dir: Path, smollm2_path: Path) -> None:
    """Gemma 3 with an 8-token window, which the prompt outruns: a custom mask applies the
    window in the sliding layers (a per-layer-type mask), on the prompt pass and on the pass
    over the appended path of a two-token candidate, as the model's own masking does."""
    from fixtures.hf_tiny import TINY_KINDS, build_tiny

    kind = "gemma3_window"
    path = build_tiny(kind, hf_models_dir / f"tiny-{kind}", smollm2_path, TINY_KINDS.index(kind))
    backend = make_hf(str(path), run_options(path))
    assert backend.family.sliding_window == 8
    for candidates in (("A", "B", "C", "D"), ("1", "10", "7")):
        hr = replace(_grounding_request(backend, candidates), hide=())
        assert backend.encode([_plain_request(hr)]).input_ids.shape[1] > 40
        masked = _scores(backend, hr)
        plain = _deleted_sequence_probs(backend, hr, (0, 0), masked.candidate_tokens)
        assert dict(masked.sequence_probs) == pytest.approx(plain, rel=MASK_RTOL)
    # the window matters here: a mask without it gives another answer
    letters = replace(_grounding_request(backend, ("A", "B", "C", "D")), hide=())
    want = _scores(backend, letters).sequence_probs
    backend.family = replace(backend.family, sliding_window=None)
    unwindowed = _scores(backend, letters).sequence_probs
    assert dict(unwindowed) != pytest.approx(dict(want), rel=1e-3)


# --------------------------------------------------------------------------------------------
# image: the processor's pixels of the original image, box and all
# --------------------------------------------------------------------------------------------

PIXEL_INPUTS = ("pixel_values", "pixel_values_images")


def test_image(kind: str, backend: HfBackend, calls: Calls) -> None:
    if kind == "llama":
        response = backend.complete([_letters_request(_question(False), _boxed(7))])[0]
        assert response.extra["images_dropped"] == 1
        return
    boxed = _boxed(7, 120, 200)
    plain = _image(7, 120, 200)
    q = _question(False)
    with_box, without = backend.complete([_letters_request(q, boxed), _letters_request(q, plain)])
    # the model sees the image: another image (the box removed) changes its answer
    assert with_box.candidate_probs != pytest.approx(without.candidate_probs, rel=1e-3)
    (sent,) = calls.inputs
    ref = _plain_inputs(backend, _letters_request(q, boxed))
    name = next(n for n in PIXEL_INPUTS if n in ref)
    # the first image's pixels, as the family's processor makes them at its own resolution
    rows = ref[name].shape[0]
    assert torch.equal(sent[name][:rows].float(), ref[name].float())
    # the box is part of them: the same image without it gives other pixels
    bare = _plain_inputs(backend, _letters_request(q, plain))[name]
    assert not torch.equal(bare, ref[name])
    assert torch.equal(sent[name][rows:].float(), bare.float())


# --------------------------------------------------------------------------------------------
# load: a local directory, and a hub id offline from a hub-layout cache
# --------------------------------------------------------------------------------------------

HUB_ORG = "clearsight-tests"

_HUB_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from clearsight.models import Message, Request, load_backend

    kinds = sys.argv[1:]
    if "gemma3n" in kinds:  # its vision tower is timm's (tests/fixtures/torchvision_standin.py)
        from fixtures.torchvision_standin import import_timm

        import_timm()
    image = (np.random.default_rng(3).random((48, 80, 3)) * 255).astype(np.uint8)
    out = {}
    for kind in kinds:
        backend = load_backend(f"hf:{HUB_ORG}/tiny-{kind}", {"batch_size": 8})
        content = (image,) if backend.capabilities.images else ()
        request = Request(
            (Message.user(*content, "Which one? A, B, C or D."),),
            candidates=("A", "B", "C", "D"),
            generate=False,
        )
        out[kind] = {
            "probs": backend.complete([request])[0].candidate_probs,
            "source": backend.source,
            "commit": backend.info["commit"],
        }
    print(json.dumps(out))
    """
).replace("HUB_ORG", repr(HUB_ORG))


def _lay_out_hub_cache(cache: Path, repo_id: str, checkpoint: Path) -> str:
    """Put ``checkpoint`` into ``cache`` as ``huggingface_hub`` lays a downloaded repository
    out: files as content-addressed ``blobs``, a ``snapshots/<commit>`` tree of relative
    symlinks to them, and ``refs/main`` naming the commit. Returns the commit."""
    from huggingface_hub.file_download import repo_folder_name

    repo = cache / repo_folder_name(repo_id=repo_id, repo_type="model")
    digest = hashlib.sha1()
    files = sorted(p for p in checkpoint.rglob("*") if p.is_file())
    for path in files:
        digest.update(path.relative_to(checkpoint).as_posix().encode() + path.read_bytes())
    commit = digest.hexdigest()
    for path in files:
        blob = hashlib.sha256(path.read_bytes()).hexdigest()
        (repo / "blobs").mkdir(parents=True, exist_ok=True)
        (repo / "blobs" / blob).write_bytes(path.read_bytes())
        link = repo / "snapshots" / commit / path.relative_to(checkpoint)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(repo / "blobs" / blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return commit


class HubRun:
    """Every family loaded by hub id in ONE subprocess with ``HF_HOME`` at a fresh cache and
    ``HF_HUB_OFFLINE=1``, started early so that it runs beside the in-process checks."""

    def __init__(self, paths: dict[str, Path], home: Path) -> None:
        from huggingface_hub import scan_cache_dir

        self.commits = {
            kind: _lay_out_hub_cache(home / "hub", f"{HUB_ORG}/tiny-{kind}", path)
            for kind, path in paths.items()
        }
        self.scanned = scan_cache_dir(home / "hub")
        env = dict(os.environ, HF_HOME=str(home), HF_HUB_OFFLINE="1")
        env.pop("HF_HUB_CACHE", None)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "tests"), env.get("PYTHONPATH", "")]
        )
        self._out, self._err = home / "stdout", home / "stderr"
        with self._out.open("w") as out, self._err.open("w") as err:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _HUB_SCRIPT, *paths], env=env, stdout=out, stderr=err
            )
        self._answers: dict[str, Any] | None = None

    def answers(self) -> dict[str, Any]:
        """What each family answered (waits for the subprocess)."""
        if self._answers is None:
            code = self._process.wait(timeout=600)
            assert code == 0, self._err.read_text()[-3000:]
            self._answers = json.loads(self._out.read_text().strip().splitlines()[-1])
        return self._answers


@pytest.fixture(scope="session")
def hub_run(
    family_paths: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HubRun]:
    run = HubRun(family_paths, tmp_path_factory.mktemp("hf-home"))
    yield run
    run._process.kill()
    run._process.wait()


def test_load(kind: str, backend: HfBackend, hub_run: HubRun) -> None:
    repo_id = f"{HUB_ORG}/tiny-{kind}"
    scanned = hub_run.scanned
    assert not scanned.warnings
    (repo,) = [r for r in scanned.repos if r.repo_id == repo_id]
    (revision,) = repo.revisions
    assert revision.commit_hash == hub_run.commits[kind]
    assert revision.refs == frozenset({"main"})
    got = hub_run.answers()[kind]
    # loaded by its id, from the snapshot refs/main names (the config records its commit)
    assert got["source"] == repo_id
    assert got["commit"] == hub_run.commits[kind]
    # the same answer as the local directory's (another process: float32 rounding only)
    content = (_image(3),) if backend.capabilities.images else ()
    request = Request(
        (Message.user(*content, "Which one? A, B, C or D."),),
        candidates=("A", "B", "C", "D"),
        generate=False,
    )
    want = backend.complete([request])[0].candidate_probs
    assert want is not None
    assert got["probs"] == pytest.approx(want, rel=LETTER_RTOL)


# --------------------------------------------------------------------------------------------
# refused at load: what cannot be run faithfully stops before the run
# --------------------------------------------------------------------------------------------


def _config_only(tmp_path: Path, config: Any) -> Path:
    config.save_pretrained(tmp_path)
    return tmp_path


def test_vlm_registered_as_causal_lm_is_refused(tmp_path: Path) -> None:
    """Phi-4-multimodal: transformers maps it to AutoModelForCausalLM; loading it would run
    text-only and drop every image without a word."""
    import transformers

    config = transformers.Phi4MultimodalConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
    )
    path = _config_only(tmp_path, config)
    with pytest.raises(InputError, match=r"phi4_multimodal.*causal LM.*drop every image"):
        make_hf(str(path), {})
    with pytest.raises(InputError, match="drop every image"):
        make_hf(str(path), {"kind": "vlm"})


def test_encoder_decoder_is_refused(tmp_path: Path) -> None:
    import transformers

    path = _config_only(tmp_path, transformers.Florence2Config())
    with pytest.raises(InputError, match=r"florence2.*encoder-decoder"):
        make_hf(str(path), {})


def test_gemma3n_without_timm_says_what_it_needs(
    family_paths: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine where transformers finds no usable timm (timm needs torchvision), loading
    Gemma 3n stops in one line naming timm. Simulated by transformers' own gate answering no
    (here timm is imported through the test-only stand-in, see fixtures.torchvision_standin)."""
    from transformers.utils import import_utils

    _, message = import_utils.BACKENDS_MAPPING["timm"]
    monkeypatch.setitem(import_utils.BACKENDS_MAPPING, "timm", (lambda: False, message))
    with pytest.raises(InputError, match=r"(?s)cannot load the weights of .*requires the timm"):
        make_hf(str(family_paths["gemma3n"]), {})


def test_gemma3n_tower_is_real_timm_and_never_reaches_torchvision(
    backends: dict[str, HfBackend],
) -> None:
    """Gemma 3n's vision tower is timm's own MobileNetV5, built of timm and torch modules only;
    the test-only torchvision stand-in timm was imported beside is gone from ``sys.modules``
    (transformers sees no torchvision), and what it left in timm refuses to run."""
    import timm.data.transforms
    import timm.layers.norm_act
    from transformers.utils import import_utils

    from fixtures.torchvision_standin import TorchvisionNameMissingError, TorchvisionStandInError

    tower = backends["gemma3n"].model.model.vision_tower.timm_model
    assert type(tower).__module__ == "timm.models.mobilenetv5"
    modules = {type(m).__module__.split(".")[0] for m in tower.modules()}
    assert modules == {"timm", "torch"}
    assert "torchvision" not in sys.modules
    assert not import_utils.is_torchvision_available()
    with pytest.raises(TorchvisionStandInError, match="test-only import stand-in"):
        timm.layers.norm_act.FrozenBatchNorm2d(4)
    with pytest.raises(TorchvisionStandInError, match=r"transforms\.ToTensor"):
        timm.data.transforms.MaybeToTensor()
    with pytest.raises(TorchvisionNameMissingError, match=r"transforms\.functional\.to_tensor"):
        timm.data.transforms.F.to_tensor(np.zeros((2, 2, 3), np.uint8))


# --------------------------------------------------------------------------------------------
# the conformance table in the README
# --------------------------------------------------------------------------------------------


def conformance_table() -> str:
    """The conformance table as markdown (the README's section holds exactly this)."""
    head = "| Family | quirks row | " + " | ".join(HEADERS[c] for c in CHECKS) + " |"
    rule = "|" + "---|" * (len(CHECKS) + 2)
    rows = [
        f"| {FAMILIES[k]} | {ROWS.get(k, '—')} | "
        + " | ".join(EXPECTED[k][c] for c in CHECKS)
        + " |"
        for k in KINDS
    ]
    rows += [
        f"| {label} | — | {why} |" + " |" * (len(CHECKS) - 1)
        for label, why in LOAD_REFUSED.values()
    ]
    return "\n".join([head, rule, *rows])


def test_quirk_rows_are_the_tables(backends: dict[str, HfBackend]) -> None:
    """A family has a row in the quirks table exactly where the conformance table says so."""
    from clearsight.models.families import FAMILIES as ROWS_IN_CODE

    for kind, backend in backends.items():
        assert (backend.family.model_type in ROWS_IN_CODE) == (kind in ROWS), kind


def test_every_family_runs_with_its_own_attention(backends: dict[str, HfBackend]) -> None:
    """The suite loads every family as a new run does: with its family's attention kernel,
    ``sdpa`` for each family here (their masked and batch checks pass under it), which the
    model then uses in every attention layer."""
    for kind, backend in backends.items():
        assert backend.options.attn_implementation == backend.family.attention == "sdpa", kind
        layers = {m.config._attn_implementation for m in backend.model.modules() if _has(m)}
        assert layers == {"sdpa"}, (kind, layers)
        assert backend.info["attn_implementation"] == "sdpa"


def _has(module: Any) -> bool:
    return hasattr(getattr(module, "config", None), "_attn_implementation")


def test_readme_table_is_the_conformance_table() -> None:
    assert conformance_table() in (ROOT / "README.md").read_text()
