"""``openai:<base_url>#<model>``: any OpenAI-compatible chat-completions server.

One backend for vLLM's server, llama.cpp's ``llama-server`` (and its bindings), Ollama and
OpenAI itself, through the official ``openai`` client in its async form: a batch of requests
runs concurrently on an event loop, at most ``max_concurrency`` in flight.

What a request becomes:

* **Messages**: text parts as text, images as base64 PNG data URLs (``image_url`` parts); a
  message without images is sent as a plain string, which every server accepts.
* **Candidate probabilities** (``Request.candidates``, e.g. the option letters): the answer
  token's top-k log-probabilities (``logprobs=True, top_logprobs=k``; ``max_tokens=1`` when the
  request does not generate). A candidate's probability sums the tokens whose text equals it
  once whitespace is stripped (``"A"`` and ``" A"``); a candidate outside the top-k gets 0 and
  the mass the top-k does not cover, ``1 - sum(top-k)``, goes to ``Response.uncovered_mass``
  — recorded, never invented (:func:`clearsight.models.logprobs.candidate_probs_from_top_logprobs`).
  Only the first token is scored, so a candidate must be one token.
* **Samples**: ``n`` per request through the ``n`` parameter, split into calls of at most
  ``max_n_per_call``; a server that returns fewer choices than asked gets further calls (seeds
  offset by one per call) until there are ``n``.

Failures. The client's own retries are off; this module retries 408, 409, 429, 5xx, time-outs
and connection errors itself, with exponential back-off and full jitter
(``uniform(0, min(backoff_max_s, backoff_base_s * 2**retry))``), or the server's
``Retry-After``/``retry-after-ms`` when it sends one (capped at ``backoff_max_s``). Any other
status, malformed JSON, or a reply without the logprobs a request needs fails that request at
once with its reason. A request that fails for good becomes a :class:`RequestFailedError`; the
others in its batch still succeed and are not redone: ``complete`` then raises
:class:`PartialBatchError` whose ``results`` hold every request's :class:`Response` or
:class:`RequestFailedError` in order (a one-request batch raises the :class:`RequestFailedError`
itself). A caller that only knows "``complete`` raised" may retry the requests one by one and
stays correct; one that reads ``results`` keeps the finished work.

The API key is read from the environment variable ``api_key_env`` on every batch and handed
only to the client; it is never stored on the backend, nor put in its repr, a response, a
reason or a log line (a reason that quotes it has it replaced by ``***``). Local servers need
no key: when the variable is unset the placeholder ``"EMPTY"`` is sent.

Servers, as far as known:

* **vLLM** (``vllm serve``): logprobs and ``top_logprobs`` up to ``--max-logprobs`` (default
  20), computed from the raw logits; ``n`` and ``seed`` honoured; images for vision models.
* **llama.cpp** ``llama-server`` (also ``xllamacpp``, llama-cpp-python's server): logprobs and
  ``top_logprobs`` for chat completions, from the raw logits (before the sampler) unless
  ``post_sampling_probs`` is set; ``n`` must not exceed the number of slots (``--parallel``),
  else HTTP 400: set ``max_n_per_call``; images only with a multimodal projector (``--mmproj``).
* **Ollama** (``/v1``): logprobs only since v0.12.11 — older versions drop them silently, which
  fails candidate requests with "server returned no logprobs"; ``n`` is ignored (one choice),
  which the top-up calls cover (``max_n_per_call=1`` avoids the wasted first try).
* **OpenAI**: ``top_logprobs`` at most 20; reasoning models reject ``logprobs`` and
  ``temperature`` and want ``max_tokens_field="max_completion_tokens"``; ``seed`` is
  best-effort, so sampled texts are not exactly reproducible.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import io
import json
import logging
import os
import random
import time
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from clearsight.credentials import refuse_credentials
from clearsight.execute import progress
from clearsight.models.base import (
    ENGINE_CAPABILITIES,
    Capabilities,
    Decoding,
    ImagePart,
    Message,
    PartialBatchError,
    Request,
    RequestFailedError,
    Response,
    Role,
    TokenLogprob,
)
from clearsight.models.extras import install_hint
from clearsight.models.logprobs import candidate_probs_from_top_logprobs
from clearsight.validate import InputError, check_image, invalid_options

if TYPE_CHECKING:
    from openai import APIStatusError, AsyncOpenAI

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Statuses worth another try: request timeout, conflict (lock contention), rate limit; and 5xx.
_RETRY_STATUSES = frozenset({408, 409, 429})
#: The placeholder key sent when the key variable is unset (vLLM's documented convention).
_NO_KEY = "EMPTY"


class OpenAIOptions(BaseModel):
    """Options of the ``openai:`` backend (``model_options`` of a run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_key_env: str = Field(
        "OPENAI_API_KEY",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="Name of the environment variable holding the API key; the key itself is "
        "read at call time and never stored or recorded (a key given here is refused).",
    )
    timeout_s: float = Field(
        60.0,
        gt=0,
        description="Time limit of one whole HTTP attempt in seconds, from connecting to the "
        "reply's last byte (then it is retried).",
    )
    max_retries: int = Field(
        4, ge=0, description="Retries after the first attempt for retryable failures."
    )
    backoff_base_s: float = Field(
        0.5, gt=0, description="Back-off scale: retry r waits up to base * 2**r seconds."
    )
    backoff_max_s: float = Field(
        30.0, gt=0, description="Longest wait between attempts, Retry-After included."
    )
    max_concurrency: int = Field(
        8, ge=1, description="Requests in flight at once (an asyncio semaphore)."
    )
    top_logprobs: int = Field(
        20,
        ge=1,
        description="k of the top-k log-probabilities asked for when scoring candidates "
        "(OpenAI allows at most 20; vLLM up to its --max-logprobs).",
    )
    max_n_per_call: int | None = Field(
        None,
        ge=1,
        description="Most samples asked for in one call (llama.cpp: its --parallel slots; "
        "Ollama: 1); None asks for all n at once.",
    )
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens",
        description="Body field that carries the token limit (OpenAI reasoning models need "
        "max_completion_tokens).",
    )
    extra_body: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Extra JSON fields merged into every request body (server-specific, e.g. "
        "vLLM's top_k or llama.cpp's cache_prompt).",
    )


class ImageURL(TypedDict):
    """The ``image_url`` object of an image part: the image as a data URL."""

    url: str


class TextPart(TypedDict):
    """A text part of a chat message's content."""

    type: Literal["text"]
    text: str


class ImagePartJSON(TypedDict):
    """An image part of a chat message's content."""

    type: Literal["image_url"]
    image_url: ImageURL


class ChatMessage(TypedDict):
    """One message in the chat-completions shape (OpenAI's, which vLLM's ``LLM.chat`` shares):
    a plain string content, or a list of parts in order."""

    role: Role
    content: str | list[TextPart | ImagePartJSON]


class ReplyMeta(TypedDict):
    """What one chat-completions reply says besides its choices: the ``model`` field as the
    server sent it (stored raw) and the whole-number ``usage`` counts."""

    model: Any
    usage: dict[str, int]


class _RetryableError(Exception):
    """An attempt failed in a way another attempt may fix."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class _FatalError(Exception):
    """An attempt failed in a way retrying cannot fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_model_spec(arg: str) -> tuple[str, str]:
    """``"http://host:8000/v1#name"`` -> ``("http://host:8000/v1", "name")``."""
    base_url, sep, model = arg.rpartition("#")
    if not sep or not base_url or not model:
        raise InputError(
            f"openai backend needs '<base_url>#<model>', e.g. 'http://127.0.0.1:8000/v1#my-model'"
            f"; got {arg!r}"
        )
    if not base_url.startswith(("http://", "https://")):
        raise InputError(f"openai base URL must start with http:// or https://, got {base_url!r}")
    return base_url.rstrip("/"), model


def image_data_url(image: Any) -> str:
    """A uint8 HxWx3 image as a ``data:image/png;base64,...`` URL (lossless, so the model sees
    exactly the degraded pixels)."""
    from PIL import Image

    pixels = check_image(image)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """Messages in the chat-completions shape: a plain string when a message has no image,
    else a list of ``text``/``image_url`` parts in order."""
    out: list[ChatMessage] = []
    for m in messages:
        if not any(isinstance(p, ImagePart) for p in m.content):
            out.append({"role": m.role, "content": m.text})
            continue
        parts: list[TextPart | ImagePartJSON] = []
        for p in m.content:
            if isinstance(p, ImagePart):
                parts.append({"type": "image_url", "image_url": {"url": image_data_url(p.image)}})
            else:
                parts.append({"type": "text", "text": p.text})
        out.append({"role": m.role, "content": parts})
    return out


def logprobs_wanted(request: Request, top_logprobs: int) -> int:
    """k of the top-k log-probabilities a request needs (0: none): at least ``top_logprobs``
    when it asks for candidate probabilities."""
    if request.candidates:
        return max(top_logprobs, request.decoding.top_logprobs)
    return request.decoding.top_logprobs if request.generate else 0


def chat_body(
    request: Request, model: str, options: OpenAIOptions, n: int, call: int = 0
) -> dict[str, Any]:
    """The JSON body of one chat-completions call for ``request`` asking for ``n`` samples;
    ``call`` numbers the calls of one request (it offsets the seed so top-up calls differ)."""
    d = request.decoding
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request.messages),
        "n": n,
        "temperature": d.temperature,
        "top_p": d.top_p,
        options.max_tokens_field: max(1, d.max_new_tokens) if request.generate else 1,
    }
    if d.seed is not None:
        body["seed"] = d.seed + call
    k = logprobs_wanted(request, options.top_logprobs)
    if k:
        body["logprobs"] = True
        body["top_logprobs"] = k
    return body


@dataclass
class _Choice:
    index: int
    text: str
    finish_reason: str | None
    tokens: tuple[TokenLogprob, ...] | None


def parse_completion(data: Any, want_logprobs: bool) -> tuple[list[_Choice], ReplyMeta]:
    """Choices and metadata of one chat-completions JSON reply; raises :class:`_FatalError` with a
    reason for a reply that is not one (or lacks the logprobs asked for)."""
    if not isinstance(data, dict):
        raise _FatalError(f"malformed response: expected a JSON object, got {type(data).__name__}")
    if "error" in data and "choices" not in data:
        raise _FatalError(f"server returned an error: {str(data['error'])[:300]}")
    raw_choices = data.get("choices")
    if not isinstance(raw_choices, list) or not raw_choices:
        raise _FatalError("malformed response: no choices")
    choices: list[_Choice] = []
    try:
        for i, ch in enumerate(raw_choices):
            message = ch.get("message") or {}
            text = message.get("content") or ""
            logprobs = ch.get("logprobs")
            content = logprobs.get("content") if isinstance(logprobs, dict) else None
            tokens = None
            if content:
                tokens = tuple(
                    TokenLogprob(
                        str(t["token"]),
                        float(t["logprob"]),
                        tuple(
                            (str(a["token"]), float(a["logprob"]))
                            for a in (t.get("top_logprobs") or ())
                        ),
                    )
                    for t in content
                )
            if want_logprobs and not tokens:
                raise _FatalError("server returned no logprobs; does it support logprobs?")
            if want_logprobs and tokens and not tokens[0].top:
                raise _FatalError("server returned no top_logprobs; does it support top_logprobs?")
            choices.append(
                _Choice(int(ch.get("index", i)), str(text), ch.get("finish_reason"), tokens)
            )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise _FatalError(f"malformed response: unexpected choice shape ({exc!r})") from exc
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    meta: ReplyMeta = {
        "model": data.get("model"),
        "usage": {k: int(v) for k, v in usage.items() if isinstance(v, int)},
    }
    choices.sort(key=lambda c: c.index)
    return choices, meta


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``retry-after`` in seconds or as an
    HTTP date), or None."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion from sync code. Inside a running event loop (a notebook, an
    async application) it runs on a private loop in a worker thread instead, since a loop
    cannot be re-entered."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="clearsight-openai") as pool:
        return pool.submit(asyncio.run, coro).result()


@dataclass
class _Attempts:
    """HTTP attempts made for one request (all its calls), for the record and the reason."""

    count: int = 0


class OpenAIBackend:
    """An OpenAI-compatible chat-completions server (see the module docstring)."""

    capabilities = ENGINE_CAPABILITIES

    def __init__(
        self, base_url: str, model: str, options: OpenAIOptions | None = None, *, seed: int = 0
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.options = options or OpenAIOptions()
        self.name = f"openai:{base_url}#{model}"
        # jitter only spreads retries in time; it never changes an output
        self._rng = random.Random(seed)

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r}, "
            f"options={self.options!r})"
        )

    # -- public API ---------------------------------------------------------------------------

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request, in order; see the module docstring for failures."""
        results = _run(self.complete_async(requests))
        failed = [r for r in results if isinstance(r, RequestFailedError)]
        if not failed:
            return [r for r in results if isinstance(r, Response)]
        if len(results) == 1:
            raise failed[0]
        raise PartialBatchError(results)

    async def complete_async(
        self, requests: Sequence[Request]
    ) -> list[Response | RequestFailedError]:
        """Every request's :class:`Response` or :class:`RequestFailedError`, in order, on the
        running event loop (for async callers; :meth:`complete` wraps it)."""
        from openai import AsyncOpenAI

        key = os.environ.get(self.options.api_key_env) or _NO_KEY
        semaphore = asyncio.Semaphore(self.options.max_concurrency)
        answered = 0

        async def counted(index: int, request: Request) -> Response | RequestFailedError:
            """One request, then the call's progress (:mod:`clearsight.execute.progress`):
            the run's bar moves as the server answers, not once the whole batch is in."""
            nonlocal answered
            result = await self._one(client, semaphore, key, index, request)
            answered += 1
            progress.report(answered, len(requests))
            return result

        async with AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            timeout=self.options.timeout_s,
            max_retries=0,
        ) as client:
            return list(await asyncio.gather(*(counted(i, r) for i, r in enumerate(requests))))

    def preflight(self, needs: Capabilities) -> None:
        """Before a run: the server answers, serves the model and returns what ``needs``
        asks for (:func:`preflight`)."""
        preflight(self, needs)

    # -- one request --------------------------------------------------------------------------

    async def _one(
        self,
        client: AsyncOpenAI,
        semaphore: asyncio.Semaphore,
        key: str,
        index: int,
        request: Request,
    ) -> Response | RequestFailedError:
        started = time.perf_counter()
        attempts = _Attempts()
        try:
            per_call = self.options.max_n_per_call or request.n
            want = logprobs_wanted(request, self.options.top_logprobs) > 0
            choices: list[_Choice] = []
            usage: dict[str, int] = {}
            models: list[Any] = []
            call = 0
            while len(choices) < request.n and call < request.n:
                n = min(per_call, request.n - len(choices))
                body = chat_body(request, self.model, self.options, n, call)
                data = await self._call(client, semaphore, body, index, attempts, key)
                got, meta = parse_completion(data, want)
                choices.extend(got[:n])
                for k, v in meta["usage"].items():
                    usage[k] = usage.get(k, 0) + v
                models.append(meta["model"])
                call += 1
            return self._response(request, choices, usage, models, attempts, started)
        except (_FatalError, _RetryableError) as exc:
            return RequestFailedError(_scrub(exc.reason, key), attempts.count)
        except InputError as exc:  # a bad image in this request, or logprobs that do not add up
            return RequestFailedError(_scrub(str(exc), key), attempts.count)

    def _response(
        self,
        request: Request,
        choices: list[_Choice],
        usage: dict[str, int],
        models: list[Any],
        attempts: _Attempts,
        started: float,
    ) -> Response:
        want = logprobs_wanted(request, self.options.top_logprobs) > 0
        candidate_probs: dict[str, float] | None = None
        uncovered: float | None = None
        if request.candidates:
            first = choices[0].tokens[0] if choices[0].tokens else None
            if first is None:  # parse_completion guarantees it; kept for the type checker
                raise InputError("no first-token logprobs")
            pool = list(first.top)
            if (first.token, first.logprob) not in pool:  # the sampled token, when outside top-k
                pool.append((first.token, first.logprob))
            candidate_probs, uncovered = candidate_probs_from_top_logprobs(pool, request.candidates)
        return Response(
            texts=tuple(c.text for c in choices) if request.generate else (),
            token_logprobs=tuple(c.tokens or () for c in choices) if want else None,
            candidate_probs=candidate_probs,
            uncovered_mass=uncovered,
            usage=usage,
            latency_s=time.perf_counter() - started,
            extra={
                "model": models[0] if len(set(map(str, models))) == 1 else models,
                "finish_reasons": [c.finish_reason for c in choices],
                "attempts": attempts.count,
            },
        )

    async def _call(
        self,
        client: AsyncOpenAI,
        semaphore: asyncio.Semaphore,
        body: dict[str, Any],
        index: int,
        attempts: _Attempts,
        key: str,
    ) -> Any:
        """One chat-completions call with the retry loop; the parsed JSON reply."""
        opts = self.options
        for retry in range(opts.max_retries + 1):
            try:
                async with semaphore:
                    attempts.count += 1
                    return await self._attempt(client, body)
            except _RetryableError as exc:
                if retry == opts.max_retries:
                    raise
                cap = min(opts.backoff_max_s, opts.backoff_base_s * 2**retry)
                wait = (
                    min(exc.retry_after_s, opts.backoff_max_s)
                    if exc.retry_after_s is not None
                    else self._rng.uniform(0.0, cap)
                )
                log.warning(
                    "%s: request %d attempt %d of %d failed (%s); retrying in %.2f s",
                    self.name,
                    index,
                    retry + 1,
                    opts.max_retries + 1,
                    _scrub(exc.reason, key),
                    wait,
                )
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, client: AsyncOpenAI, body: dict[str, Any]) -> Any:
        """One HTTP attempt, its failure classified as retryable or fatal. ``timeout_s``
        bounds the whole attempt (connecting, sending, the reply to its last byte), not each
        read: a server that trickles its reply a byte at a time is cut off at the deadline."""
        import openai

        limit = self.options.timeout_s
        try:
            async with asyncio.timeout(limit):
                raw = await client.chat.completions.with_raw_response.create(
                    **body, extra_body=self.options.extra_body or None
                )
                text = raw.text
        except (openai.APITimeoutError, TimeoutError) as exc:
            raise _RetryableError(f"timeout: no complete reply within {limit:g} s") from exc
        except openai.APIConnectionError as exc:
            raise _RetryableError(f"connection error: {exc}") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            reason = f"HTTP {status}: {_error_message(exc)}"
            if status == 401:
                reason += f" (is ${self.options.api_key_env} set to a valid key?)"
            if status in _RETRY_STATUSES or status >= 500:
                raise _RetryableError(reason, _retry_after(exc.response.headers)) from exc
            raise _FatalError(reason) from exc
        except (openai.APIResponseValidationError, ValidationError, ValueError) as exc:
            raise _FatalError(f"malformed response: {exc}") from exc
        try:
            return json.loads(text)
        except ValueError as exc:
            raise _FatalError(
                f"malformed JSON from server: {exc}; body starts {text[:80]!r}"
            ) from exc


def _error_message(exc: Any) -> str:
    """The server's error message, short."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)[:300]
    return str(getattr(exc, "message", exc))[:300]


def _scrub(text: str, key: str) -> str:
    """``text`` with the API key replaced, in case a server echoed it back."""
    return text.replace(key, "***") if key and key != _NO_KEY else text


def make_openai(arg: str, options: Mapping[str, JsonValue]) -> OpenAIBackend:
    """``openai:<base_url>#<model>`` with :class:`OpenAIOptions` from ``options``; a URL or
    options holding a credential are refused without quoting it
    (:func:`~clearsight.credentials.refuse_credentials`)."""
    refuse_credentials(arg, "the openai model name", f"openai:{arg}")
    refuse_credentials(dict(options), "openai backend options", f"openai:{arg}")
    base_url, model = parse_model_spec(arg)
    try:
        opts = OpenAIOptions.model_validate(dict(options))
    except ValidationError as exc:
        raise invalid_options(exc, "openai backend options", f"openai:{arg}") from exc
    try:
        import openai  # noqa: F401  (fail now, with the install hint, not mid-run)
    except ImportError as exc:
        hint = install_hint("openai")
        raise InputError(f"the openai backend needs the openai client: {hint}") from exc
    return OpenAIBackend(base_url, model, opts)


# --------------------------------------------------------------------------------------------
# Preflight: before a run, is the server there, serving the model, returning logprobs?

#: Time limits of the preflight's requests in seconds: to connect, and for a whole request (a
#: server that cannot list its models or answer one token this fast is no server to start on).
PREFLIGHT_CONNECT_S = 3.0
PREFLIGHT_TIMEOUT_S = 10.0


#: Statuses of a server that asks to be asked again later: the preflight waits once for them,
#: as long as their ``Retry-After`` says (at most its deadline).
PREFLIGHT_BUSY: Final = (429, 503)


def preflight(backend: OpenAIBackend, needs: Capabilities) -> None:
    """Check, before a run creates anything, that ``backend``'s server answers, serves its
    model and, when ``needs`` asks for candidate probabilities or top-k log-probabilities,
    returns them. ``GET /models`` says which models the server serves; one chat completion of
    one token follows when log-probabilities are needed or when the listing does not name the
    model (llama.cpp's server answers under any name; vLLM refuses a name it does not serve).

    One deadline, :data:`PREFLIGHT_TIMEOUT_S` (or ``timeout_s``, if shorter), bounds the whole
    attempt, both requests to their last byte (a server that trickles its reply is cut off at
    it, not after each slow read); connecting gets :data:`PREFLIGHT_CONNECT_S`. A server busy
    (:data:`PREFLIGHT_BUSY`) with a ``Retry-After`` is waited for once, that long but never
    longer than the deadline, and asked again; nothing else is retried. Raises InputError
    naming the model and what is wrong."""
    import openai

    check = _Preflight(backend, needs.candidate_probs or needs.top_logprobs)
    try:
        _run(check.ask())
    except (openai.APIConnectionError, TimeoutError) as exc:
        raise check.unreachable(exc) from None
    except (openai.APIStatusError, _FatalError) as exc:
        raise check.refused(exc) from None


class _Preflight:
    """One preflight of ``backend`` (see :func:`preflight`); ``want``: whether the run needs
    log-probabilities. Keeps what the server listed, for the refusal's message."""

    def __init__(self, backend: OpenAIBackend, want: bool) -> None:
        self.backend = backend
        self.want = want
        self.key = os.environ.get(backend.options.api_key_env) or _NO_KEY
        self.limit = min(backend.options.timeout_s, PREFLIGHT_TIMEOUT_S)
        self.served: list[str] | None = None
        self.waited = 0.0

    async def ask(self) -> None:
        """The attempt within its deadline; once more after a busy server's ``Retry-After``."""
        import openai

        timeout = openai.Timeout(self.limit, connect=min(self.limit, PREFLIGHT_CONNECT_S))
        async with openai.AsyncOpenAI(
            api_key=self.key, base_url=self.backend.base_url, timeout=timeout, max_retries=0
        ) as client:
            while True:
                try:
                    async with asyncio.timeout(self.limit):
                        await self._attempt(client)
                    return
                except openai.APIStatusError as exc:
                    wait = _retry_after(exc.response.headers)
                    if self.waited or exc.status_code not in PREFLIGHT_BUSY or wait is None:
                        raise
                    self.waited = min(wait, self.limit)
                    await asyncio.sleep(self.waited)

    async def _attempt(self, client: Any) -> None:
        self.served = await _served_models(client)
        model = self.backend.model
        if self.want or self.served is None or model not in self.served:
            await _one_token(client, self.backend, self.want)

    def unreachable(self, exc: Exception) -> InputError:
        """The refusal when no server answers at the URL, or none within the deadline."""
        import openai

        timed_out = isinstance(exc, openai.APITimeoutError | TimeoutError)
        reason = f"no reply within {self.limit:g} s" if timed_out else exc.__cause__ or exc
        return InputError(
            f"model {self.backend.name!r} cannot be used: no server answers at "
            f"{self.backend.base_url} ({_scrub(str(reason), self.key)}); start the server or "
            "correct the URL"
        )

    def refused(self, exc: APIStatusError | _FatalError) -> InputError:
        """The refusal when the server answers with an error or without what the run needs."""
        if isinstance(exc, _FatalError):
            reason = exc.reason
        else:
            reason = f"HTTP {exc.status_code}: {_error_message(exc)}"
            if exc.status_code in (401, 403):
                reason += f" (is ${self.backend.options.api_key_env} set to a valid key?)"
            if self.waited:
                reason += f" (asked again after waiting {self.waited:g} s as it asked)"
        model = self.backend.model
        if self.served is not None and model not in self.served:
            shown = ", ".join(repr(m) for m in self.served[:8]) or "none"
            reason = (
                f"the server at {self.backend.base_url} does not serve {model!r} (it lists "
                f"{shown}; name one after '#'): {reason}"
            )
        return InputError(f"model {self.backend.name!r} cannot be used: {_scrub(reason, self.key)}")


async def _served_models(client: Any) -> list[str] | None:
    """The model ids ``GET /models`` lists; None when the server has no such route (404, 405,
    or 501 from a server that implements no GET)."""
    import openai

    try:
        raw = await client.models.with_raw_response.list()
    except openai.APIStatusError as exc:
        if exc.status_code in (404, 405, 501):
            return None
        raise
    try:
        data = json.loads(raw.text).get("data")
        return [str(m["id"]) for m in data]
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise _FatalError(f"malformed reply to GET /models: {raw.text[:80]!r}") from exc


async def _one_token(client: Any, backend: OpenAIBackend, want_logprobs: bool) -> None:
    """One chat completion of one token, with the top-k log-probabilities a letter read-out
    asks for when ``want_logprobs``; :class:`_FatalError` when the reply lacks what is needed."""
    message = (Message.user("Reply with the letter A."),)
    request = (
        Request(message, Decoding(max_new_tokens=1), candidates=("A", "B"), generate=False)
        if want_logprobs
        else Request(message, Decoding(max_new_tokens=1))
    )
    body = chat_body(request, backend.model, backend.options, n=1)
    raw = await client.chat.completions.with_raw_response.create(
        **body, extra_body=backend.options.extra_body or None
    )
    try:
        data = json.loads(raw.text)
    except ValueError as exc:
        raise _FatalError(f"malformed JSON from server: body starts {raw.text[:80]!r}") from exc
    parse_completion(data, want_logprobs)
