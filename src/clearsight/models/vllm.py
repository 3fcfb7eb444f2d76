"""``vllm:<model id or path>``: offline vLLM on a GPU machine.

One :class:`vllm.LLM` per backend, loaded on the first batch; every request of a batch goes to
one ``llm.chat(conversations, sampling_params=[...])`` call, so vLLM's own continuous batching
does the scheduling (clearsight does not re-implement it). ``vllm`` is imported only here,
and only then.

What a request becomes (:func:`build_chat_inputs`, pure and tested without vLLM):

* **Messages**: OpenAI-style content parts, which ``LLM.chat`` renders with the model's chat
  template — text parts, and images as base64 PNG ``image_url`` data URLs (accepted by every
  vLLM release with ``LLM.chat``; lossless, so the model sees exactly the degraded pixels).
* **Sampling**: ``SamplingParams(n, temperature, top_p, max_tokens, logprobs=k, seed)``, with
  ``max_tokens=1`` for a request that only scores candidates and ``logprobs=k`` whenever
  candidates or top-k log-probabilities are wanted.

What comes back (:func:`parse_request_output`, tested on recorded outputs in
``tests/data/vllm/``): vLLM's ``RequestOutput.outputs`` holds one ``CompletionOutput`` per
sample, whose ``logprobs`` has one ``{token_id: Logprob(logprob, rank, decoded_token)}`` per
generated token — the top-k plus the sampled token when it is not among them (so k or k+1
distinct tokens). By default (``logprobs_mode="raw_logprobs"`` in the V1 engine) these are the
log-softmax of the raw logits, before temperature and top-p. Candidate probabilities come from
the first generated token of the first sample exactly as for the ``openai:`` backend
(:func:`clearsight.models.logprobs.candidate_probs_from_top_logprobs`): a candidate outside the
returned tokens gets 0, and the mass they do not cover is ``Response.uncovered_mass``.

vLLM caps ``logprobs`` at the engine's ``max_logprobs`` (20 by default); :class:`VLLMOptions`
raises the cap to ``top_logprobs`` when asked for more. A failing batch raises from
``complete`` (vLLM validates the whole batch up front), and the caller retries requests one by
one so a bad request fails alone.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from clearsight.models.base import ENGINE_CAPABILITIES, Request, Response, TokenLogprob
from clearsight.models.extras import install_hint
from clearsight.models.logprobs import candidate_probs_from_top_logprobs
from clearsight.models.openai_api import ChatMessage, chat_messages, logprobs_wanted
from clearsight.validate import InputError, invalid_options


class VLLMOptions(BaseModel):
    """Options of the ``vllm:`` backend (``model_options`` of a run); engine options go to
    ``vllm.LLM``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_logprobs: int = Field(
        20, ge=1, description="k of the top-k log-probabilities asked for when scoring candidates."
    )
    revision: str | None = Field(None, description="Model revision (branch, tag or commit).")
    dtype: str = Field("auto", description="Weight and activation dtype (vLLM's dtype).")
    max_model_len: int | None = Field(
        None, ge=1, description="Context length; None takes the model's own."
    )
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1, description="Share of GPU memory vLLM may claim."
    )
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one replica is split over.")
    seed: int = Field(0, description="Engine seed (a request's own seed takes precedence).")
    trust_remote_code: bool = Field(
        False, description="Allow model code from the checkpoint (needed by some VLMs)."
    )
    max_images_per_prompt: int = Field(
        1, ge=0, description="limit_mm_per_prompt for images (memory is reserved for this many)."
    )
    use_tqdm: bool = Field(False, description="Show vLLM's progress bar per batch.")
    engine_kwargs: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Further keyword arguments for vllm.LLM (e.g. enforce_eager, quantization).",
    )

    def llm_kwargs(self, model: str) -> dict[str, JsonValue]:
        """Keyword arguments for ``vllm.LLM``."""
        kwargs: dict[str, JsonValue] = {
            "model": model,
            "dtype": self.dtype,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "tensor_parallel_size": self.tensor_parallel_size,
            "seed": self.seed,
            "trust_remote_code": self.trust_remote_code,
            "max_logprobs": max(20, self.top_logprobs),
            "limit_mm_per_prompt": {"image": self.max_images_per_prompt},
        }
        if self.revision is not None:
            kwargs["revision"] = self.revision
        if self.max_model_len is not None:
            kwargs["max_model_len"] = self.max_model_len
        kwargs.update(self.engine_kwargs)
        return kwargs


class SamplingKwargs(TypedDict):
    """The keyword arguments of ``vllm.SamplingParams`` a request sets (``logprobs``: top-k,
    only when the request needs log-probabilities)."""

    n: int
    temperature: float
    top_p: float
    max_tokens: int
    seed: int | None
    logprobs: NotRequired[int]


def sampling_kwargs(request: Request, options: VLLMOptions) -> SamplingKwargs:
    """Keyword arguments for ``vllm.SamplingParams`` of one request."""
    d = request.decoding
    kwargs: SamplingKwargs = {
        "n": request.n,
        "temperature": d.temperature,
        "top_p": d.top_p,
        "max_tokens": max(1, d.max_new_tokens) if request.generate else 1,
        "seed": d.seed,
    }
    k = logprobs_wanted(request, options.top_logprobs)
    if k:
        kwargs["logprobs"] = k
    return kwargs


def build_chat_inputs(
    requests: Sequence[Request], options: VLLMOptions
) -> tuple[list[list[ChatMessage]], list[SamplingKwargs]]:
    """The conversations and the ``SamplingParams`` keyword arguments of a batch."""
    return (
        [chat_messages(r.messages) for r in requests],
        [sampling_kwargs(r, options) for r in requests],
    )


def _position(entries: Mapping[Any, Any], chosen: int | None) -> TokenLogprob:
    """One generated position: ``{token_id: Logprob}`` -> the sampled token, with every
    returned token (top-k, and the sampled one if outside it) best first as ``top``."""
    items = []
    for token_id, lp in entries.items():
        text = getattr(lp, "decoded_token", None)
        if text is None:
            raise InputError(
                f"vLLM returned token {token_id} without its text (decoded_token is None): "
                "run with detokenization on"
            )
        items.append((int(token_id), str(text), float(lp.logprob)))
    items.sort(key=lambda t: (-t[2], t[0]))
    top = tuple((text, logprob) for _, text, logprob in items)
    for token_id, text, logprob in items:
        if token_id == chosen:
            return TokenLogprob(text, logprob, top)
    raise InputError(f"vLLM logprobs miss the sampled token {chosen}")


def _sample_logprobs(completion: Any) -> tuple[TokenLogprob, ...] | None:
    positions: Iterable[Mapping[Any, Any]] | None = completion.logprobs
    if positions is None:
        return None
    token_ids = list(completion.token_ids)
    out = []
    for i, entries in enumerate(positions):
        out.append(_position(entries, token_ids[i] if i < len(token_ids) else None))
    return tuple(out)


def parse_request_output(
    output: Any, request: Request, options: VLLMOptions, latency_s: float = 0.0
) -> Response:
    """A :class:`Response` from one vLLM ``RequestOutput`` (or an object with its fields)."""
    completions = sorted(output.outputs, key=lambda c: c.index)
    if len(completions) != request.n:
        raise InputError(f"vLLM returned {len(completions)} samples for n={request.n}")
    want = logprobs_wanted(request, options.top_logprobs) > 0
    samples = [_sample_logprobs(c) for c in completions]
    if want and any(not s for s in samples):
        raise InputError("vLLM returned no logprobs although SamplingParams.logprobs was set")
    candidate_probs: dict[str, float] | None = None
    uncovered: float | None = None
    if request.candidates:
        first = samples[0][0] if samples[0] else None
        if first is None:
            raise InputError("vLLM returned no first-token logprobs")
        # vLLM's dict already holds the sampled token, so `top` covers it
        candidate_probs, uncovered = candidate_probs_from_top_logprobs(
            first.top, request.candidates
        )
    prompt_ids = getattr(output, "prompt_token_ids", None) or []
    completion_tokens = sum(len(c.token_ids) for c in completions)
    return Response(
        texts=tuple(str(c.text) for c in completions) if request.generate else (),
        token_logprobs=tuple(s or () for s in samples) if want else None,
        candidate_probs=candidate_probs,
        uncovered_mass=uncovered,
        usage={
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": completion_tokens,
            "total_tokens": len(prompt_ids) + completion_tokens,
        },
        latency_s=latency_s,
        extra={"finish_reasons": [c.finish_reason for c in completions]},
    )


class VLLMBackend:
    """Offline vLLM (see the module docstring). ``llm`` and ``sampling_params`` replace
    ``vllm.LLM(...)`` and ``vllm.SamplingParams`` — for tests, which run without vLLM."""

    capabilities = ENGINE_CAPABILITIES

    def __init__(
        self,
        model: str,
        options: VLLMOptions | None = None,
        *,
        llm: Any = None,
        sampling_params: Callable[..., Any] | None = None,
    ) -> None:
        self.model = model
        self.options = options or VLLMOptions()
        self.name = f"vllm:{model}"
        self._llm = llm
        self._sampling_params = sampling_params

    def __repr__(self) -> str:
        return f"VLLMBackend(model={self.model!r}, options={self.options!r})"

    def _engine(self) -> tuple[Any, Callable[..., Any]]:
        if self._llm is None or self._sampling_params is None:
            try:
                vllm = importlib.import_module("vllm")
            except ImportError as exc:
                raise InputError(f"model {self.name!r} needs vLLM: {install_hint('vllm')}") from exc
            if self._llm is None:
                self._llm = vllm.LLM(**self.options.llm_kwargs(self.model))
            if self._sampling_params is None:
                self._sampling_params = vllm.SamplingParams
        return self._llm, self._sampling_params

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request, in order, from one ``llm.chat`` call."""
        if not requests:
            return []
        llm, sampling_params = self._engine()
        conversations, kwargs = build_chat_inputs(requests, self.options)
        params = [sampling_params(**kw) for kw in kwargs]
        started = time.perf_counter()
        outputs = llm.chat(conversations, sampling_params=params, use_tqdm=self.options.use_tqdm)
        latency = (time.perf_counter() - started) / len(requests)
        if len(outputs) != len(requests):
            raise InputError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests")
        return [
            parse_request_output(o, r, self.options, latency)
            for o, r in zip(outputs, requests, strict=True)
        ]


def make_vllm(arg: str, options: Mapping[str, JsonValue]) -> VLLMBackend:
    """``vllm:<model id or path>`` with :class:`VLLMOptions` from ``options``; the engine is
    loaded on the first batch."""
    if not arg:
        raise InputError("vllm backend needs a model id or path, e.g. vllm:HuggingFaceTB/SmolVLM")
    try:
        opts = VLLMOptions.model_validate(dict(options))
    except ValidationError as exc:
        raise invalid_options(exc, "vllm backend options", f"vllm:{arg}") from exc
    if importlib.util.find_spec("vllm") is None:  # fail before the run, not on its first batch
        raise InputError(f"model 'vllm:{arg}' needs vLLM: {install_hint('vllm')}")
    return VLLMBackend(arg, opts)
