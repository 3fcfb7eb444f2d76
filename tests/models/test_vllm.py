"""The ``vllm:`` backend without vLLM: request building, and parsing of recorded outputs.

vLLM needs a GPU, so the parser is exercised on recorded outputs (``tests/data/vllm/``, see its
README) rebuilt here into objects with exactly the attributes of vLLM's ``RequestOutput``,
``CompletionOutput`` and ``Logprob``, and ``complete`` runs against a stand-in ``LLM`` that
records what it was given. The last test runs real vLLM where it is installed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearsight.models import Decoding, Message, Request, TextPart
from clearsight.models.vllm import (
    VLLMBackend,
    VLLMOptions,
    build_chat_inputs,
    make_vllm,
    parse_request_output,
)
from clearsight.validate import InputError

DATA = Path(__file__).parents[1] / "data" / "vllm"


# -- vLLM's output classes, field for field (vllm/outputs.py, vllm/logprobs.py; see README) ---


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: Any
    outputs: list[CompletionOutput]
    finished: bool


def request_output(data: dict[str, Any]) -> RequestOutput:
    """A recorded ``RequestOutput`` (JSON, token ids as string keys) as vLLM's objects."""
    outputs = [
        CompletionOutput(
            index=o["index"],
            text=o["text"],
            token_ids=list(o["token_ids"]),
            cumulative_logprob=o["cumulative_logprob"],
            logprobs=None
            if o["logprobs"] is None
            else [{int(k): Logprob(**v) for k, v in pos.items()} for pos in o["logprobs"]],
            finish_reason=o["finish_reason"],
            stop_reason=o["stop_reason"],
        )
        for o in data["outputs"]
    ]
    return RequestOutput(
        data["request_id"],
        data["prompt"],
        data["prompt_token_ids"],
        data["prompt_logprobs"],
        outputs,
        data["finished"],
    )


def fixture(name: str) -> tuple[dict[str, Any], RequestOutput]:
    data = json.loads((DATA / name).read_text())
    return data, request_output(data["request_output"])


def request_for(data: dict[str, Any], **kw: Any) -> Request:
    """The clearsight request the fixture's conversation and sampling parameters came from."""
    messages = tuple(Message(m["role"], (TextPart(m["content"]),)) for m in data["messages"])
    sp = data["sampling_params"]
    decoding = Decoding(
        max_new_tokens=sp["max_tokens"],
        temperature=sp["temperature"],
        top_p=sp["top_p"],
        seed=sp["seed"],
        top_logprobs=kw.pop("top_logprobs", 0),
    )
    return Request(messages, decoding, n=sp["n"], **kw)


@dataclass
class SamplingParams:
    """Stands in for vllm.SamplingParams: keeps its keyword arguments."""

    kwargs: dict[str, Any]

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@dataclass
class FakeLLM:
    """Stands in for vllm.LLM: returns the given outputs, records each chat call."""

    outputs: list[RequestOutput]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def chat(self, messages: Any, sampling_params: Any = None, use_tqdm: bool = True) -> Any:
        self.calls.append({"messages": messages, "params": sampling_params, "tqdm": use_tqdm})
        return self.outputs


def backend(outputs: list[RequestOutput], **options: Any) -> VLLMBackend:
    return VLLMBackend(
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        VLLMOptions(**options),
        llm=FakeLLM(outputs),
        sampling_params=SamplingParams,
    )


# -- tests -----------------------------------------------------------------------------------


def test_candidates_from_recorded_first_token_logprobs():
    data, out = fixture("candidates.json")
    req = request_for(data, candidates=("A", "B", "C", "D", "E"), generate=False)
    b = backend([out])
    [r] = b.complete([req])
    # the request vLLM was given is the recorded one
    [call] = b._llm.calls
    assert [p.kwargs for p in call["params"]] == [data["sampling_params"]]
    # text-only turns go as plain strings, the OpenAI chat shape LLM.chat accepts
    assert call["messages"] == [
        [{"role": m["role"], "content": m["content"]} for m in data["messages"]]
    ]
    assert call["tqdm"] is False
    # hand-computed from the fixture: the 20 entries of the first position
    [first] = data["request_output"]["outputs"][0]["logprobs"][:1]
    by_text: dict[str, float] = {}
    for e in first.values():
        by_text[e["decoded_token"].strip()] = by_text.get(e["decoded_token"].strip(), 0.0) + (
            math.exp(e["logprob"])
        )
    assert r.candidate_probs == pytest.approx({k: by_text.get(k, 0.0) for k in "ABCDE"})
    assert r.candidate_probs["A"] == pytest.approx(math.exp(-1.2088), abs=1e-4)
    covered = sum(math.exp(e["logprob"]) for e in first.values())
    assert r.uncovered_mass == pytest.approx(1 - covered)
    assert 0 < r.uncovered_mass < 0.2
    assert r.texts == ()
    assert r.token_logprobs is not None
    assert r.token_logprobs[0][0].token == "A"
    assert len(r.token_logprobs[0][0].top) == 20
    assert r.usage == {"prompt_tokens": 66, "completion_tokens": 1, "total_tokens": 67}
    assert r.extra["finish_reasons"] == ["length"]
    json.dumps(r.to_json())


def test_generated_samples_with_tokens_outside_top_k():
    data, out = fixture("generate_n2.json")
    req = request_for(data, top_logprobs=2)
    [r] = backend([out]).complete([req])
    assert r.texts == ("Amina B", "a: a:")
    assert r.candidate_probs is None
    assert r.uncovered_mass is None
    assert r.token_logprobs is not None
    s0, s1 = r.token_logprobs
    assert [t.token for t in s0] == ["A", "min", "a", " B"]
    # "min" was sampled from outside the top-2: vLLM adds it, so its position has k + 1 tokens
    assert s0[1].top == (
        ("le", pytest.approx(-1.89136, abs=1e-5)),
        (" colour", pytest.approx(-2.30791, abs=1e-5)),
        ("min", pytest.approx(-3.86180, abs=1e-5)),
    )
    assert s0[1].logprob == pytest.approx(-3.8618, abs=1e-4)
    assert [len(t.top) for t in s1] == [3, 3, 2, 2]
    cumulative = data["request_output"]["outputs"][0]["cumulative_logprob"]
    assert sum(t.logprob for t in s0) == pytest.approx(cumulative)
    assert r.usage["completion_tokens"] == 8


def test_flat_logprobs_container_is_read_like_a_list():
    """vLLM's FlatLogprobs (newer releases) iterates as one {token_id: Logprob} per position."""
    data, out = fixture("candidates.json")

    class FlatLogprobs:
        def __init__(self, positions: list[dict[int, Logprob]]) -> None:
            self._positions = positions

        def __len__(self) -> int:
            return len(self._positions)

        def __iter__(self) -> Iterator[dict[int, Logprob]]:
            yield from (dict(p) for p in self._positions)

    req = request_for(data, candidates=("A", "B"), generate=False)
    plain = parse_request_output(out, req, VLLMOptions())
    out.outputs[0].logprobs = FlatLogprobs(out.outputs[0].logprobs)  # type: ignore[assignment]
    flat = parse_request_output(out, req, VLLMOptions())
    # exact: the same parser over the same logprobs in the same order, only the container differs
    assert flat.candidate_probs == plain.candidate_probs
    assert flat.uncovered_mass == plain.uncovered_mass


def test_sampling_params_of_requests():
    img = np.zeros((2, 3, 3), dtype=np.uint8)
    reqs = [
        Request((Message.user(img, "Which?"),), candidates=("A", "B"), generate=False),
        Request((Message.user("Say"),), Decoding(max_new_tokens=9, temperature=0.7, seed=4), n=3),
        Request((Message.user("Say"),), Decoding(top_logprobs=5)),
    ]
    conversations, kwargs = build_chat_inputs(reqs, VLLMOptions(top_logprobs=8))
    assert kwargs == [
        {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 1, "seed": None, "logprobs": 8},
        {"n": 3, "temperature": 0.7, "top_p": 1.0, "max_tokens": 9, "seed": 4},
        {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 16, "seed": None, "logprobs": 5},
    ]
    parts = conversations[0][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "text"]
    assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_bad_outputs_fail_with_a_reason():
    data, out = fixture("candidates.json")
    req = request_for(data, candidates=("A",), generate=False)
    with pytest.raises(InputError, match="1 samples for n=2"):
        parse_request_output(out, Request(req.messages, n=2, candidates=("A",)), VLLMOptions())
    first = out.outputs[0].logprobs[0]
    next(iter(first.values())).decoded_token = None
    with pytest.raises(InputError, match="decoded_token is None"):
        parse_request_output(out, req, VLLMOptions())
    out.outputs[0].logprobs = None
    with pytest.raises(InputError, match="no logprobs"):
        parse_request_output(out, req, VLLMOptions())
    with pytest.raises(InputError, match="2 outputs for 1 requests"):
        backend([out, out]).complete([req])


def test_options_and_factory():
    opts = VLLMOptions(top_logprobs=50, max_model_len=4096, engine_kwargs={"enforce_eager": True})
    kw = opts.llm_kwargs("m")
    assert kw["max_logprobs"] == 50  # raised so that logprobs=50 is allowed
    assert kw["limit_mm_per_prompt"] == {"image": 1}
    assert (kw["max_model_len"], kw["enforce_eager"], kw["model"]) == (4096, True, "m")
    assert "revision" not in kw
    with pytest.raises(InputError, match="top_logprobs"):
        make_vllm("m", {"top_logprobs": 0})
    with pytest.raises(InputError, match="model id"):
        make_vllm("", {})
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match=r"needs vLLM.*clearsight\[vllm\]"):
            make_vllm("m", {})
    else:
        assert make_vllm("m", {}).name == "vllm:m"  # the engine loads on the first batch
    assert repr(VLLMBackend("m")).startswith("VLLMBackend(model='m'")
    assert VLLMBackend("m").complete([]) == []


def test_real_vllm_accepts_the_request_and_fills_the_response():
    """Where vLLM is installed: its SamplingParams take our keyword arguments, and on a GPU
    the embedded SmolLM2 answers an MCQ with candidate probabilities."""
    vllm = pytest.importorskip("vllm", reason="vLLM is not installed (it needs a GPU machine)")
    data, _ = fixture("candidates.json")
    req = request_for(data, candidates=("A", "B", "C", "D", "E"), generate=False)
    _, [kwargs] = build_chat_inputs([req], VLLMOptions())
    params = vllm.SamplingParams(**kwargs)
    assert (params.max_tokens, params.logprobs) == (1, 20)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU: vLLM's engine does not run here")
    from clearsight.models.embedded import smollm2_dir

    b = VLLMBackend(str(smollm2_dir()), VLLMOptions(max_model_len=2048, max_images_per_prompt=0))
    [r] = b.complete([req])
    assert r.candidate_probs is not None
    assert r.uncovered_mass is not None
    assert 0 < sum(r.candidate_probs.values()) <= 1 - r.uncovered_mass + 1e-6
