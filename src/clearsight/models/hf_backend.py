"""The ``hf`` backend's computation: batched candidate probabilities, generation, masked scoring.

**Candidate probabilities** (docs/methods.md §3, §5). Requests are left-padded into batches of
``batch_size`` and run in ONE forward pass per batch; the next-token distribution at the last
position is the answer slot. A candidate ``X`` is scored under each of its spellings ``"X"`` and
``" X"`` (tokenized on their own, without special tokens; identical token sequences counted
once) and its probability is the sum over spellings of the spelling's sequence probability

    p(t1 .. tm) = p(t1) p(t2 | t1) ... p(tm | t1 .. tm-1)

Single-token spellings need nothing beyond the prompt pass, so a ``generate=False`` request with
single-token candidates (option letters) costs exactly one forward pass. Multi-token spellings
get one extra pass over their tokens on top of the prompt's KV cache (rows of the cache are
selected per spelling, so the prompt is not recomputed). When one spelling is a strict prefix of
another in the same request ("1" and "10"), the shorter one must also *end* there, so its
probability is multiplied by ``p(end | prefix) = 1 - sum of p(t | prefix)`` over the tokens ``t``
that continue it into the longer spellings: p("1") = p("1") p(end | "1"), and the candidates'
probabilities never count the same continuation twice. Probabilities are raw, not renormalised.

**Generation.** Each request is prefilled once (batched with the others); its KV cache rows are
then repeated ``n`` times and all samples are decoded together, one token per step, so ``n``
samples cost one prefill. Greedy when ``temperature == 0`` (one row decoded, copied ``n``
times); otherwise sampling with ``temperature`` and nucleus ``top_p`` from a per-request
``torch.Generator`` seeded with ``decoding.seed`` (0 when unset; one uniform per sample and
token, inverse-CDF in float64), so a request's samples do not depend on what else is in the
batch. ``top_logprobs=k`` reports, for every generated token, its
log-probability and the ``k`` most likely alternatives under the model's own distribution
(``log_softmax`` of the logits, before temperature and ``top_p``).

**Masked scoring** (trajectory grounding, docs/methods.md §5): :meth:`HfBackend.score_hidden`
scores candidates in context with given character ranges of the last message hidden from every
later position (positions kept; :mod:`clearsight.models.hf_hidden`), through two custom passes:
:meth:`HfBackend.forward_with_mask` (one pass under a 4-D mask,
:mod:`clearsight.models.hf_mask`) and :meth:`HfBackend.forward_with_prefix` (a shared prefix
once, its KV cache forked to every row). Every custom mask passes through
:meth:`HfBackend._forward`, which keeps the family's own pattern
(:mod:`clearsight.models.families`: Gemma 3's image tokens attending each other both ways, the
window of sliding-window layers); a family whose attention cannot honour such a mask has the
``attention_mask`` capability withheld, with the reason in ``HfBackend.lacking``.

Identical requests in one ``complete`` call are computed once (a text-only model drops images,
so the blind control's 24 image conditions collapse to one prompt). ``latency_s`` is the
request's share of its batch's wall time (the model seconds of its record); ``usage`` holds its
prompt and completion tokens and the images the model was shown.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from clearsight.execute import progress
from clearsight.models import hf_hidden, hf_memory, hf_prefix
from clearsight.models.base import (
    Capabilities,
    HiddenRequest,
    HiddenScores,
    ImagePart,
    Message,
    Request,
    RequestFailedError,
    Response,
    TokenLogprob,
)
from clearsight.models.families import Family, check_loadable, family_of
from clearsight.models.hf_inputs import (
    Batch,
    ChatInputs,
    ProcessorInputs,
    TextInputs,
    continued_positions,
    load_processor,
    to_pil,
)
from clearsight.models.hf_mask import (
    additive,
    check_ranges,
    windowed,
    with_image_blocks,
)
from clearsight.models.hf_options import HfOptions
from clearsight.models.hf_work import BatchSize, WorkItem, WorkOut, fork_cache, past_cache
from clearsight.seeding import content_hash
from clearsight.validate import InputError

Seq = tuple[int, ...]


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def pick_device(choice: str) -> torch.device:
    """The torch device for an ``HfOptions.device`` choice; an unavailable one is an error."""
    if choice == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        raise InputError("device 'cuda' requested but torch sees no CUDA device")
    if choice == "mps" and not torch.backends.mps.is_available():
        raise InputError("device 'mps' requested but torch's MPS backend is not available")
    return torch.device(choice)


def pick_dtype(choice: str, device: torch.device) -> torch.dtype:
    """The torch dtype for an ``HfOptions.dtype`` choice on ``device``."""
    if choice != "auto":
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[
            choice
        ]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def _vlm_types() -> frozenset[str]:
    """The model types transformers loads with ``AutoModelForImageTextToText``."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return frozenset(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)


def _missing_model(source: str, cache_dir: str | None, exc: Exception) -> InputError:
    if cache_dir is None:
        try:
            from huggingface_hub.constants import HF_HUB_CACHE

            cache_dir = str(HF_HUB_CACHE)
        except ImportError:
            cache_dir = "default location"
    cache = f" ({cache_dir})"
    return InputError(
        f"model {source!r} is not a local directory and is not in the Hugging Face cache{cache}; "
        f"clearsight never downloads weights. Fetch it once where there is internet "
        f"(`hf download {source}`, or `huggingface-cli download {source}`, then copy the cache) "
        f"or pass hf:<path to a local checkpoint>. ({type(exc).__name__}: {exc})"
    )


def _from_pretrained_options(options: HfOptions, local_dir: bool) -> dict[str, Any]:
    """The keyword arguments every ``from_pretrained`` of one model gets: never download, trust
    remote code as asked, and for a hub id the revision and cache directory asked for."""
    hub = {} if local_dir else {"revision": options.revision, "cache_dir": options.cache_dir}
    return {
        "local_files_only": True,
        "trust_remote_code": options.trust_remote_code,
        **{key: value for key, value in hub.items() if value is not None},
    }


def _read_config(tf: Any, source: str, name: str, options: HfOptions, local_dir: bool) -> Any:
    """The transformers config of ``source``; InputError saying why it cannot be read (an
    optional package missing, a broken local directory, a hub id not in the cache)."""
    try:
        return tf.AutoConfig.from_pretrained(source, **_from_pretrained_options(options, local_dir))
    except ImportError as exc:  # a config class that needs an optional package (timm, ...)
        raise InputError(f"cannot read the config of {name}: {exc}") from exc
    except (OSError, ValueError) as exc:
        if local_dir:
            raise InputError(f"cannot read the model config in {source}: {exc}") from exc
        raise _missing_model(source, options.cache_dir, exc) from exc


def load_hf(
    source: str, name: str, options: HfOptions, local_dir: bool, adapter: str | None = None
) -> HfBackend:
    """Load ``source`` (a local directory or a cached Hugging Face id) as an :class:`HfBackend`;
    with ``adapter`` (a LoRA adapter directory) the adapter is merged into the weights."""
    import transformers

    # typed loosely: transformers' Auto* factories are partly untyped
    tf: Any = transformers

    # weight loading bars from every worker would bury the run's own progress bar
    tf.utils.logging.disable_progress_bar()
    common = _from_pretrained_options(options, local_dir)
    config = _read_config(tf, source, name, options, local_dir)
    family = family_of(config, _vlm_types(), options.kind)
    check_loadable(family, name)
    is_vlm = options.kind == "vlm" or (options.kind == "auto" and config.model_type in _vlm_types())
    device = pick_device(options.device)
    dtype = pick_dtype(options.dtype, device)
    model_cls = tf.AutoModelForImageTextToText if is_vlm else tf.AutoModelForCausalLM
    try:
        model = model_cls.from_pretrained(
            source, dtype=dtype, attn_implementation=options.attn_implementation, **common
        )
    except (ImportError, OSError, ValueError) as exc:
        raise InputError(f"cannot load the weights of {name}: {exc}") from exc
    if adapter is not None:
        model = _merge_adapter(model, adapter, name)
    model.to(device).eval()
    inputs: ChatInputs
    if not is_vlm:
        inputs = TextInputs(tf.AutoTokenizer.from_pretrained(source, **common), model, name)
    else:
        inputs = ProcessorInputs(load_processor(tf, source, common, name), model, name)
    backend = HfBackend(model, inputs, options, name=name, source=source, family=family)
    if not local_dir:
        backend.commit = _snapshot_commit(source, options)
    return backend


def _snapshot_commit(repo_id: str, options: HfOptions) -> str | None:
    """The commit of the cached snapshot a hub id resolved to (the directory name under
    ``snapshots/``), for the run's manifest; None when it cannot be told."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(
        repo_id, "config.json", cache_dir=options.cache_dir, revision=options.revision
    )
    return Path(found).parent.name if isinstance(found, str) else None


def _merge_adapter(model: Any, adapter: str, name: str) -> Any:
    """``model`` with the LoRA adapter in ``adapter`` merged into its weights (``peft``)."""
    try:
        from peft import PeftModel
    except ImportError as exc:
        from clearsight.models.extras import install_hint

        raise InputError(
            f"{name} is a LoRA adapter and needs peft: {install_hint('train')}"
        ) from exc
    try:
        return PeftModel.from_pretrained(model, adapter).merge_and_unload()
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"cannot load the adapter {adapter}: {exc}") from exc


# --------------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------------


class _Decode:
    """The state of one decoding loop: which request each sample row decodes for (``owner``),
    each request's rows (``groups``: request, first row, end row) and generator, and per row
    the tokens and log-probabilities so far and whether it is done."""

    def __init__(self, items: list[WorkItem], gen: list[int], owner: list[int]) -> None:
        self.items = items
        self.gen = gen
        self.owner = owner
        self.groups = [(b, owner.index(b), len(owner) - owner[::-1].index(b)) for b in gen]
        self.generators: dict[int, torch.Generator] = {}
        for b in gen:
            seed = items[b].request.decoding.seed
            self.generators[b] = torch.Generator().manual_seed(0 if seed is None else int(seed))
        self.tokens: list[list[int]] = [[] for _ in owner]
        self.lps: list[list[TokenLogprob]] = [[] for _ in owner]
        self.done = [items[b].request.decoding.max_new_tokens == 0 for b in owner]

    @property
    def finished(self) -> bool:
        """Whether every sample is done."""
        return all(self.done)


def _common_suffix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return n


def _withheld(options: HfOptions, family: Family) -> dict[str, str]:
    """Capabilities a loaded model withholds, each with the reason: custom attention masks
    need an eager or SDPA attention, and some families score badly under them."""
    if options.attn_implementation not in ("eager", "sdpa"):
        return {
            "attention_mask": f"custom attention masks need attn_implementation 'eager' or "
            f"'sdpa', not {options.attn_implementation!r}"
        }
    if family.masked_scoring is not None:
        return {"attention_mask": family.masked_scoring}
    return {}


def _image_token_id(config: Any) -> int | None:
    """The id of the image token in a model's config (its name varies by family), or None."""
    image_id = getattr(config, "image_token_id", None)
    if image_id is None:
        image_id = getattr(config, "image_token_index", None)
    return None if image_id is None else int(image_id)


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """Every token id that ends a generation: the model's generation config's and the
    tokenizer's end of sequence."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    eos_ids = {eos} if isinstance(eos, int) else set(eos or ())
    if tokenizer.eos_token_id is not None:
        eos_ids.add(int(tokenizer.eos_token_id))
    return frozenset(int(e) for e in eos_ids)


class HfBackend:
    """A transformers model behind the :class:`~clearsight.models.base.Backend` protocol."""

    def __init__(
        self,
        model: Any,
        inputs: ChatInputs,
        options: HfOptions,
        name: str,
        source: str,
        family: Family | None = None,
    ) -> None:
        self.model = model
        self.inputs = inputs
        self.options = options
        self.name = name
        self.source = source
        #: The hub snapshot's commit when loaded by hub id (set by load_hf), else None.
        self.commit: str | None = None
        self.family = family if family is not None else Family()
        self.tokenizer = inputs.tokenizer
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        #: Capabilities withheld, with the reason (``require`` quotes it when a run needs one).
        self.lacking = _withheld(options, self.family)
        self.capabilities = Capabilities(
            images=inputs.images,
            generate=True,
            candidate_probs=True,
            top_logprobs=True,
            n_per_call=True,
            attention_mask="attention_mask" not in self.lacking,
        )
        self._image_token_id = _image_token_id(model.config)
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self.eos_ids = _eos_ids(model, self.tokenizer)
        self._seqs: dict[str, list[Seq]] = {}
        #: ``batch_size: auto``'s findings per image size (:mod:`hf_memory`), for ``info``.
        self.batch_sizes: dict[str, BatchSize] = {}
        #: The image placeholder's token id in rendered prompts, where prompts may share their
        #: image prefix (:mod:`clearsight.models.hf_prefix`); None where they never do.
        self._placeholder_id = self._placeholder() if self.family.shares_prefix else None

    def _placeholder(self) -> int | None:
        token = getattr(getattr(self.inputs, "processor", None), "image_token", None)
        if not isinstance(token, str):
            return None
        found = self.tokenizer.convert_tokens_to_ids(token)
        return None if found is None or found == self.tokenizer.unk_token_id else int(found)

    @property
    def info(self) -> dict[str, Any]:
        """What was loaded, for a run's manifest: source, architecture, revision, numerics."""
        config = self.model.config
        return {
            "name": self.name,
            "source": self.source,
            "model_type": config.model_type,
            "architecture": type(self.model).__name__,
            "commit": self.commit,
            "revision": self.options.revision,
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": str(self.device),
            "attn_implementation": self.options.attn_implementation,
            "inputs": type(self.inputs).__name__,
            "batch_size": self.options.batch_size,
            "batch_sizes": {k: dict(v) for k, v in self.batch_sizes.items()},
        }

    # ---------------------------------------------------------------- public API

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request; see the module docstring for what each field holds."""
        return self._run([self._item(r) for r in requests])

    def prompt_text(self, request: Request) -> str:
        """The rendered prompt of ``request`` (chat template applied, image placeholders
        unexpanded): the text :meth:`hidden_token_ranges`' character ranges index into."""
        return self.inputs.render(request.messages)

    def score_hidden(
        self, requests: Sequence[HiddenRequest], batch_size: int | None = None
    ) -> list[HiddenScores | RequestFailedError]:
        """Candidates scored in context with parts of each request's last message hidden from
        everything after them, positions kept (:class:`~clearsight.models.base.MaskedScorer`;
        how: :mod:`clearsight.models.hf_hidden`). ``batch_size`` rows to a forward call
        (default: the backend's)."""
        self._check_masks()
        return hf_hidden.score_hidden(self, requests, batch_size or self._rows())

    def hidden_token_ranges(
        self, request: Request, hide: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Token index ranges (in the unpadded input ids of ``request``) of the tokens that
        overlap the character ranges ``hide`` of :meth:`prompt_text` (what masked scoring
        hides); InputError for a range that covers no token, lies before the last image or
        reaches the answer position."""
        item = self._item(request)
        ranges = check_ranges(hide, len(item.prompt), "hidden character range")
        batch = self.inputs.encode([item.prompt], [item.images])
        return self._token_ranges(item.prompt, batch.input_ids[0].tolist(), ranges)

    def encode(self, requests: Sequence[Request]) -> Batch:
        """The left-padded model inputs of ``requests`` (for custom forward passes)."""
        items = [self._item(r) for r in requests]
        return self.inputs.encode([i.prompt for i in items], [i.images for i in items]).to(
            self.device, self.dtype
        )

    @torch.inference_mode()
    def forward_with_mask(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        logits_to_keep: int = 0,
        **model_inputs: torch.Tensor,
    ) -> torch.Tensor:
        """Float32 logits ``(B, Q, V)`` of one forward pass under a custom 4-D mask.

        ``attention_mask`` is boolean ``(B, 1, Q, K)``, True where query ``q`` may attend key
        ``k`` (build one with :func:`clearsight.models.hf_mask.hiding_mask`); ``position_ids``
        ``(B, Q)`` (or ``(3, B, Q)`` for multimodal RoPE) are kept as given, so hidden tokens
        keep their positions. ``model_inputs`` are passed through (pixels and the like, e.g.
        ``Batch.model_inputs``); ``logits_to_keep=k`` returns only the last ``k`` positions.
        """
        out = self._forward(
            input_ids=input_ids.to(self.device),
            attention_mask=self._custom_mask(attention_mask),
            position_ids=position_ids.to(self.device),
            use_cache=False,
            logits_to_keep=logits_to_keep,
            **{k: v.to(self.device) for k, v in model_inputs.items()},
        )
        return out.logits.float()

    @torch.inference_mode()
    def forward_with_prefix(
        self,
        prefix: Sequence[int],
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        logits_to_keep: int,
    ) -> torch.Tensor:
        """Float32 logits ``(B, logits_to_keep, V)`` of rows that continue one shared text-only
        ``prefix`` (token ids): the prefix computed once (a plain causal pass), its KV cache
        forked to each of the ``B`` rows, then the rows' ``input_ids`` ``(B, Q)`` in one pass
        under the boolean ``attention_mask`` ``(B, 1, Q, P + Q)`` over the prefix's ``P`` keys
        and their own, at ``position_ids`` ``(B, Q)`` (positions after the prefix, kept as
        given)."""
        n = len(prefix)
        ids = torch.tensor([list(prefix)], device=self.device)
        first = self._forward(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            position_ids=torch.arange(n, device=self.device)[None],
            use_cache=True,
            logits_to_keep=1,
        )
        cache = past_cache(first)
        rows = torch.zeros(input_ids.shape[0], dtype=torch.long, device=self.device)
        out = self._forward(
            input_ids=input_ids.to(self.device),
            attention_mask=self._custom_mask(attention_mask),
            position_ids=position_ids.to(self.device),
            cache=fork_cache(cache, rows),
            use_cache=True,
            logits_to_keep=logits_to_keep,
        )
        return out.logits.float()

    def _custom_mask(self, mask: torch.Tensor) -> torch.Tensor:
        """A custom boolean ``(B, 1, Q, K)`` mask checked and on the model's device; InputError
        when this model cannot take one (with the reason) or the mask is malformed."""
        self._check_masks()
        if mask.ndim != 4 or mask.dtype != torch.bool:
            raise InputError(
                "attention_mask must be a boolean (batch, 1, queries, keys) tensor, got "
                f"{mask.dtype} {tuple(mask.shape)}"
            )
        return mask.to(self.device)

    def _check_masks(self) -> None:
        """InputError with the reason when this model cannot take custom attention masks."""
        reason = self.lacking.get("attention_mask")
        if reason is not None:
            raise InputError(f"{self.name} cannot score under a custom attention mask: {reason}")

    # ---------------------------------------------------------------- preparation

    def _item(self, request: Request) -> WorkItem:
        images = [im for m in request.messages for im in m.images]
        if self.inputs.images:
            pil = [to_pil(im, self.options.max_image_side) for im in images]
            return WorkItem(request, self.inputs.render(request.messages), pil, 0)
        text_only = tuple(
            Message(m.role, tuple(p for p in m.content if not isinstance(p, ImagePart)))
            for m in request.messages
        )
        return WorkItem(request, self.inputs.render(text_only), [], len(images))

    def _key(self, item: WorkItem) -> str:
        """Requests with equal keys give equal responses: computed once per call."""
        r = item.request
        images = [
            [list(im.size), im.mode, hashlib.blake2b(im.tobytes(), digest_size=16).hexdigest()]
            for im in item.images
        ]
        # greedy decoding ignores the seed: requests that differ only in it are the same work
        decoding = r.decoding if r.decoding.temperature > 0 else replace(r.decoding, seed=None)
        return content_hash(
            [item.prompt, images, list(r.candidates), r.generate, r.n, repr(decoding)]
        )

    def _candidate_seqs(self, candidate: str) -> list[Seq]:
        """Distinct token sequences of the spellings ``candidate`` and ``" " + candidate``."""
        if candidate not in self._seqs:
            if not candidate.strip():
                raise InputError(f"candidate {candidate!r} is empty or only whitespace")
            stripped = candidate.lstrip()
            seqs: list[Seq] = []
            for spelling in (stripped, " " + stripped):
                ids = tuple(self.tokenizer(spelling, add_special_tokens=False)["input_ids"])
                if ids and ids not in seqs:
                    seqs.append(ids)
            self._seqs[candidate] = seqs
        return self._seqs[candidate]

    def _token_ranges(
        self, prompt: str, final_ids: Sequence[int], ranges: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Map character ranges of ``prompt`` to token ranges of ``final_ids`` (unpadded).

        The prompt is tokenized as plain text (offsets known) and aligned with the model's
        input ids from the end: text after the last image tokenizes identically in both.
        """
        plain, offsets = self.inputs.plain_tokens(prompt)
        shared = _common_suffix(plain, final_ids)
        shift = len(final_ids) - len(plain)
        out = []
        for start, end in ranges:
            hit = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
            if not hit:
                raise InputError(f"hidden character range [{start}, {end}) covers no token")
            if hit[0] < len(plain) - shared:
                raise InputError(
                    f"hidden character range [{start}, {end}) does not come after the last image"
                )
            out.append((hit[0] + shift, hit[-1] + 1 + shift))
        if out and max(e for _, e in out) >= len(final_ids):
            raise InputError("hidden text must end before the answer position (the last token)")
        return out

    # ---------------------------------------------------------------- running

    def _run(self, items: list[WorkItem]) -> list[Response]:
        keys = [self._key(i) for i in items]
        unique: dict[str, int] = {}
        todo: list[WorkItem] = []
        for key, item in zip(keys, items, strict=True):
            if key not in unique:
                unique[key] = len(todo)
                todo.append(item)
        done: dict[int, tuple[WorkOut, float]] = {}
        rows = self.options.batch_size
        if rows == "auto":
            t0 = time.perf_counter()
            rows, probed = hf_memory.auto_rows(self, todo)
            share = (time.perf_counter() - t0) / max(len(probed), 1)
            done.update((i, (out, share)) for i, out in probed.items())
        pending = [i for i in range(len(todo)) if i not in done]
        splits, groups = self._groups([todo[i] for i in pending])
        lengths = [len(todo[i].prompt) for i in pending]
        for chunk in hf_prefix.plan_chunks(lengths, groups, rows):
            t0 = time.perf_counter()
            span = (len(done) / len(todo), (len(done) + len(chunk.indices)) / len(todo))
            with progress.within(*span):  # generation says which of the chunk's rows are done
                if chunk.shared:
                    outs = hf_prefix.run_groups(
                        self,
                        [[todo[pending[j]] for j in g] for g in chunk.groups],
                        [[splits[j] for j in g] for g in chunk.groups],  # type: ignore[misc]
                    )
                else:
                    outs = self._chunk([todo[pending[j]] for j in chunk.indices])
            share = (time.perf_counter() - t0) / len(outs)
            done.update((pending[j], (o, share)) for j, o in zip(chunk.indices, outs, strict=True))
            progress.report(len(done), len(todo))
        # duplicates share the computation; what was dropped is recorded per request
        return [self._response(item, *done[unique[k]]) for k, item in zip(keys, items, strict=True)]

    def _rows(self) -> int:
        """The batch size when no call's requests decide it: the option, or under ``auto``
        the smallest found so far (:data:`hf_memory.HOST_ROWS` before any)."""
        if isinstance(self.options.batch_size, int):
            return self.options.batch_size
        found = [v["rows"] for v in self.batch_sizes.values()]
        return min(found, default=hf_memory.HOST_ROWS)

    def _groups(
        self, items: Sequence[WorkItem]
    ) -> tuple[list[hf_prefix.Split | None], list[str | None]]:
        """Where each item's prompt may share its image prefix with others (hf_prefix), and
        its group key (None: not shared). Only an item whose images another item of the call
        also shows is split: a group of one runs unsplit anyway, so a request alone (or with
        an image of its own) skips the split's tokenizations and costs what it did before
        sharing."""
        none: list[Any] = [None] * len(items)
        if self._placeholder_id is None or not hf_prefix.ENABLED or len(items) < 2:
            return none, none
        digests = [hf_prefix.image_digest(i.images) if i.images else None for i in items]
        counts = Counter(d for d in digests if d is not None)
        splits = [
            hf_prefix.split_prompt(self.tokenizer, self._placeholder_id, item.prompt)
            if d is not None and counts[d] > 1
            else None
            for item, d in zip(items, digests, strict=True)
        ]
        keys = [
            None if s is None else f"{s.prefix}\x00{d}"
            for s, d in zip(splits, digests, strict=True)
        ]
        return splits, keys

    def _response(self, item: WorkItem, out: WorkOut, latency: float) -> Response:
        extra = dict(out.extra)
        if item.dropped:
            extra["images_dropped"] = item.dropped
        return Response(
            texts=out.texts,
            token_logprobs=out.token_logprobs,
            candidate_probs=out.candidate_probs,
            usage={
                "prompt_tokens": out.prompt_tokens,
                "completion_tokens": out.completion_tokens,
                "images": len(item.images),
            },
            latency_s=latency,
            extra=extra,
        )

    def _forward(self, **kwargs: Any) -> Any:
        """One model call. A 4-D ``attention_mask`` (boolean "may attend", or additive) is
        turned into what this family's model takes (:meth:`_model_mask`); the family's
        per-token inputs are extended over tokens appended after the prompt."""
        cache = kwargs.pop("cache", None)
        mask = kwargs.get("attention_mask")
        if mask is not None and mask.ndim == 4:
            kwargs["attention_mask"] = self._model_mask(mask, kwargs["input_ids"], cache)
        length = kwargs["input_ids"].shape[1]
        for name in self.family.per_token_inputs:
            rows = kwargs.get(name)
            if rows is not None and rows.shape[1] < length:  # repeat the last row, as generate
                more = rows[:, -1:].expand(-1, length - rows.shape[1], *rows.shape[2:])
                kwargs[name] = torch.cat([rows, more], dim=1)
        if cache is not None:
            kwargs[self._cache_kw] = cache
        return self.model(**kwargs)

    def _carried(self, batch: Batch, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """The family's per-token inputs for tokens appended to the batch rows ``rows``: each
        row's last prompt row (``_forward`` repeats it over the appended tokens)."""
        return {
            name: batch.model_inputs[name][rows][:, -1:]
            for name in self.family.per_token_inputs
            if name in batch.model_inputs
        }

    def _model_mask(
        self, mask: torch.Tensor, input_ids: torch.Tensor, cache: Any
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """A custom ``(B, 1, Q, K)`` mask as this family's model takes it: the family's own
        pattern kept (the tokens of one image attending each other both ways where the family
        does so, on a pass over the whole prompt), the window of sliding-window layers applied
        (cut to the keys a sliding layer's cache still holds), as a per-layer-type dict when
        the layers differ; additive floats (0 or the dtype's minimum)."""
        allowed = mask if mask.dtype == torch.bool else mask == 0
        family = self.family
        q = allowed.shape[-2]
        image = None
        if family.bidirectional_image and q == allowed.shape[-1] and self._image_token_id:
            image = input_ids == self._image_token_id
        out: dict[str, torch.Tensor] = {}
        for layer_type in dict.fromkeys(family.layer_types):
            m = allowed
            if image is not None and layer_type in family.bidirectional_image:
                m = with_image_blocks(m, image)
            if layer_type == "sliding_attention" and family.sliding_window is not None:
                m = windowed(m, family.sliding_window)
                if cache is not None:
                    _, offset = cache.get_mask_sizes(q, family.layer_types.index(layer_type))
                    m = m[..., int(offset) :]
            out[layer_type] = additive(m, self.dtype)
        return next(iter(out.values())) if len(out) == 1 else out

    @torch.inference_mode()
    def _chunk(self, items: list[WorkItem]) -> list[WorkOut]:
        batch = self.inputs.encode([i.prompt for i in items], [i.images for i in items])
        batch = batch.to(self.device, self.dtype)
        out = self._forward(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            use_cache=self._needs_cache(items),
            logits_to_keep=1,
            **batch.model_inputs,
        )
        return self._read(items, batch, out)

    def _needs_cache(self, items: Sequence[WorkItem]) -> bool:
        """Whether a prompt pass must keep its KV cache: a generating request, or a
        multi-token candidate spelling (a continuation pass)."""
        seqs = [s for i in items for c in i.request.candidates for s in self._candidate_seqs(c)]
        return any(len(s) > 1 for s in seqs) or any(i.request.generate for i in items)

    def _read(self, items: Sequence[WorkItem], batch: Batch, out: Any) -> list[WorkOut]:
        """The outputs of ``items`` from their prompt pass ``out`` over ``batch``: candidate
        probabilities from its last position, then generation from its cache."""
        last = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        cache = past_cache(out) if self._needs_cache(items) else None
        seqs = [{c: self._candidate_seqs(c) for c in i.request.candidates} for i in items]
        results = [WorkOut(prompt_tokens=n) for n in batch.lengths]
        if any(seqs):
            probs = self._candidates(seqs, batch, last, cache)
            for b, p in enumerate(probs):
                results[b].candidate_probs = p
        gen = [b for b, i in enumerate(items) if i.request.generate]
        if gen:
            self._generate(list(items), gen, batch, last, cache, results)
        return results

    def _candidates(
        self, seqs: list[dict[str, list[Seq]]], batch: Batch, last: torch.Tensor, cache: Any
    ) -> list[dict[str, float] | None]:
        """Candidate probabilities per row from the prompt's last log-probs ``last`` (and one
        continuation pass for multi-token spellings, :meth:`_continuations`)."""
        cond = self._continuations(seqs, batch, cache)
        result: list[dict[str, float] | None] = []
        for b, per in enumerate(seqs):
            if not per:
                result.append(None)
                continue
            distinct = {s for ss in per.values() for s in ss}
            seq_p: dict[Seq, float] = {}
            for s in distinct:
                lp = float(last[b, s[0]])
                for j in range(1, len(s)):
                    lp += float(cond[(b, s[:j])][s[j]])
                p = float(np.exp(lp))
                nexts = {o[len(s)] for o in distinct if len(o) > len(s) and o[: len(s)] == s}
                if nexts:
                    dist = cond[(b, s)]
                    cont_p = float(torch.exp(dist[list(nexts)]).sum())
                    p *= max(0.0, 1.0 - cont_p)
                seq_p[s] = p
            result.append({c: float(sum(seq_p[s] for s in ss)) for c, ss in per.items()})
        return result

    def _continuations(
        self, seqs: list[dict[str, list[Seq]]], batch: Batch, cache: Any
    ) -> dict[tuple[int, Seq], torch.Tensor]:
        """``p(. | prefix)`` for every (row, token prefix) that a multi-token spelling of the
        row needs, from ONE pass that feeds the longest spellings (minus their last token) after
        the prompt on forks of its KV cache."""
        rows: list[tuple[int, Seq]] = []
        for b, per in enumerate(seqs):
            distinct = {s for ss in per.values() for s in ss}
            for s in sorted(distinct):
                longer = any(len(o) > len(s) and o[: len(s)] == s for o in distinct)
                if len(s) > 1 and not longer:
                    rows.append((b, s))
        cond: dict[tuple[int, Seq], torch.Tensor] = {}
        if not rows:
            return cond
        idx = torch.tensor([b for b, _ in rows], device=self.device)
        q = max(len(s) - 1 for _, s in rows)
        pad_id = int(self.tokenizer.pad_token_id)
        feed = torch.tensor(
            [list(s[:-1]) + [pad_id] * (q - len(s) + 1) for _, s in rows], device=self.device
        )
        cont = torch.tensor(
            [[1] * (len(s) - 1) + [0] * (q - len(s) + 1) for _, s in rows], device=self.device
        )
        out = self._forward(
            input_ids=feed,
            attention_mask=torch.cat([batch.attention_mask[idx], cont], dim=1),
            position_ids=continued_positions(batch.next_position[idx], q, self.inputs.mrope),
            cache=fork_cache(cache, idx),
            use_cache=True,
            **self._carried(batch, idx),
        )
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        for r, (b, s) in enumerate(rows):
            for j in range(len(s) - 1):
                cond[(b, s[: j + 1])] = logp[r, j]
        return cond

    def _generate(
        self,
        items: list[WorkItem],
        gen: list[int],
        batch: Batch,
        last: torch.Tensor,
        cache: Any,
        results: list[WorkOut],
    ) -> None:
        """Decode every generating row's samples together from the shared prefill."""
        # The batch row each decoded sample comes from; greedy decodes one row per request.
        owner: list[int] = []
        for b in gen:
            d = items[b].request.decoding
            owner += [b] * (1 if d.temperature == 0 else items[b].request.n)
        decode = _Decode(items, gen, owner)
        idx = torch.tensor(owner, device=self.device)
        logp = last[idx]
        cache = fork_cache(cache, idx)
        carried = self._carried(batch, idx)
        mask = batch.attention_mask[idx]
        next_pos = batch.next_position[idx]
        pad_id = int(self.tokenizer.pad_token_id)
        step = 0
        while not decode.finished:
            chosen = self._step(decode, logp.float().cpu(), pad_id)
            if decode.finished:
                break
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            out = self._forward(
                input_ids=torch.tensor(chosen, device=self.device)[:, None],
                attention_mask=mask,
                position_ids=continued_positions(next_pos + step, 1, self.inputs.mrope),
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
                **carried,
            )
            cache = past_cache(out)
            logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
            step += 1
            progress.report(sum(decode.done), len(decode.done))
        self._decoded(decode, results)

    def _step(self, decode: _Decode, logp: torch.Tensor, pad_id: int) -> list[int]:
        """One decoding step: each unfinished sample's next token picked from ``logp`` (one row
        per sample, on the CPU) and recorded; the tokens to feed next (padding for the rows
        that are done)."""
        chosen = [pad_id] * len(decode.owner)
        done = decode.done
        for b, r0, r1 in decode.groups:
            if all(done[r0:r1]):
                continue
            d = decode.items[b].request.decoding
            picks = self._choose(logp[r0:r1], d.temperature, d.top_p, decode.generators[b])
            for r, tok in zip(range(r0, r1), picks, strict=True):
                if done[r]:
                    continue
                decode.tokens[r].append(tok)
                if d.top_logprobs:
                    decode.lps[r].append(self._token_logprob(logp[r], tok, d.top_logprobs))
                if tok in self.eos_ids or len(decode.tokens[r]) >= d.max_new_tokens:
                    done[r] = True
                chosen[r] = tok
        return chosen

    def _decoded(self, decode: _Decode, results: list[WorkOut]) -> None:
        """Each generating request's texts, token count and log-probabilities into its
        result."""
        for b in decode.gen:
            request = decode.items[b].request
            mine = [r for r, o in enumerate(decode.owner) if o == b]
            if len(mine) == 1 and request.n > 1:  # greedy: every sample is the same
                mine = mine * request.n
            texts = tuple(self._text(decode.tokens[r]) for r in mine)
            results[b].texts = texts
            results[b].completion_tokens = sum(len(decode.tokens[r]) for r in mine)
            if request.decoding.top_logprobs:
                results[b].token_logprobs = tuple(tuple(decode.lps[r]) for r in mine)

    @staticmethod
    def _choose(
        logp: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator
    ) -> list[int]:
        """One token per row of ``logp`` (the rows of one request): greedy at temperature 0,
        else a draw from softmax(logits / T) cut to the nucleus ``top_p``."""
        if temperature == 0:
            return [int(t) for t in torch.argmax(logp, dim=-1).tolist()]
        probs = torch.softmax(logp / temperature, dim=-1)
        if top_p < 1.0:
            sorted_p, order = torch.sort(probs, dim=-1, descending=True)
            drop = torch.cumsum(sorted_p, dim=-1) - sorted_p >= top_p
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_p.masked_fill(drop, 0.0))
        # inverse-CDF draw, one uniform per row (torch.multinomial and the exponential race
        # cost a random number per vocabulary entry: slower than the tiny models' forward pass)
        cdf = torch.cumsum(probs.double(), dim=-1)
        u = torch.rand((probs.shape[0], 1), generator=gen, dtype=torch.float64) * cdf[:, -1:]
        picks = torch.searchsorted(cdf, u, right=True)[:, 0].clamp(max=probs.shape[-1] - 1)
        return [int(t) for t in picks.tolist()]

    def _token_logprob(self, logp: torch.Tensor, tok: int, k: int) -> TokenLogprob:
        values, ids = torch.topk(logp, min(k, logp.shape[-1]))
        top = tuple(
            (self.tokenizer.decode([int(i)]), float(v))
            for v, i in zip(values.tolist(), ids.tolist(), strict=True)
        )
        return TokenLogprob(self.tokenizer.decode([tok]), float(logp[tok]), top)

    def _text(self, tokens: list[int]) -> str:
        body = tokens[:-1] if tokens and tokens[-1] in self.eos_ids else tokens
        return str(self.tokenizer.decode(body, skip_special_tokens=True))
