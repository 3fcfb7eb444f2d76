"""Self-distillation (the paper's §4.6, Table 2): LoRA fine-tuning of a reasoner on its own
successful belief-state (BP) trajectories.

**Data.** From a probe run, the finished conversations of one ``hf`` reasoner with strategy
``bp`` that committed the gold option (:func:`successful_trajectories`). Each becomes one chat,
exactly as the reasoner read it (:func:`~clearsight.probe.loop.conversation_messages`: the
strategy's system prompt, the question, every earlier turn and the sensor's replies with the u
it was shown), ending with its committing turn. The chat is rendered with the model's own chat
template (the backend's renderer, so training and inference see the same text) and tokenised
once; only the reasoner's own turns — each turn's text and the end-of-turn token after it —
carry labels, everything else is masked (``-100``) (:func:`sft_example`). A conversation longer
than ``max_tokens`` is cut there.

**Training.** LoRA adapters (``peft``; rank, alpha, dropout and target modules configurable;
the paper's rank 16, alpha 32, 7 epochs are the defaults) on the frozen base, AdamW, one
conversation per step, token-level cross-entropy over the labelled tokens, float32 weights on
the CPU by default (``device``). A seeded
``validation`` share of the conversations (at least one when there are two or more) is held
out; after each epoch the mean loss on the training and validation conversations is recorded,
and the adapter of the epoch with the lowest validation loss is the one saved (the last epoch
when nothing could be held out; the manifest says which).

**Output.** ``out/`` holds the adapter (``adapter_model.safetensors``, ``adapter_config.json``)
and :data:`~clearsight.models.hf.ADAPTER_MANIFEST`: the base model spec, the run, the
trajectories' keys and instance ids (train / validation), the data hash, every
hyper-parameter, the seed, the loss history and the chosen epoch. ``hf:<out>`` then loads the
base with the adapter merged, a reasoner like any other, so one probe run with both
``--reasoner hf:<base>`` and ``--reasoner hf:<out>`` gives Table 2's BP accuracy before and
after (:func:`distill_table`), on instances the adapter never saw.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from clearsight.models.hf import ADAPTER_MANIFEST, adapter_manifest
from clearsight.probe.transcript import Transcript, iter_transcripts
from clearsight.seeding import content_hash, rng_for
from clearsight.store import RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Message
    from clearsight.models.hf_backend import HfBackend

__all__ = [
    "DistillConfig",
    "DistillResult",
    "SftExample",
    "adapter_bases",
    "distill",
    "distill_table",
    "sft_example",
    "successful_trajectories",
]

#: The label of a token outside the loss (PyTorch's cross-entropy ``ignore_index``).
IGNORE = -100


class DistillConfig(BaseModel):
    """What ``clearsight probe distill`` trains (the paper's setting as the defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reasoner: str | None = Field(
        None,
        description="The hf reasoner whose trajectories are distilled (and the base model); "
        "None: the run's only hf reasoner with successful BP conversations.",
    )
    strategy: str = Field("bp", description="The strategy of the trajectories (the paper: BP).")
    rank: int = Field(16, ge=1, description="LoRA rank r.")
    alpha: int = Field(32, ge=1, description="LoRA alpha (the update is scaled by alpha / r).")
    dropout: float = Field(0.05, ge=0, lt=1, description="LoRA dropout.")
    target_modules: tuple[str, ...] = Field(
        ("q_proj", "k_proj", "v_proj", "o_proj"),
        description="Modules that get adapters (the attention projections of Llama-style models).",
    )
    epochs: int = Field(7, ge=1, description="Passes over the training conversations.")
    learning_rate: float = Field(2e-4, gt=0, description="AdamW learning rate.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    validation: float = Field(
        0.1, ge=0, lt=1, description="Share of the conversations held out to choose the epoch."
    )
    max_tokens: int = Field(1024, ge=16, description="Longest conversation (tokens); cut beyond.")
    limit: int | None = Field(None, ge=1, description="At most this many trajectories.")
    seed: int = Field(0, description="Seed of the split, the order and the adapter's init.")
    device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        "cpu", description="Where to train (the hf backend's device option); float32 weights."
    )


@dataclass(frozen=True)
class SftExample:
    """One conversation as training data: token ids, labels (``IGNORE`` outside the
    reasoner's turns) and where it came from."""

    key: str
    instance_id: str
    input_ids: tuple[int, ...]
    labels: tuple[int, ...]

    @property
    def labelled(self) -> int:
        """Tokens in the loss."""
        return sum(label != IGNORE for label in self.labels)


@dataclass(frozen=True)
class DistillResult:
    """What :func:`distill` wrote: the adapter directory and its manifest."""

    out: Path
    manifest: dict[str, Any]


def successful_trajectories(
    run_dir: Path | str, reasoner: str | None = None, strategy: str = "bp"
) -> tuple[str, list[tuple[str, Transcript]]]:
    """``(reasoner, [(key, transcript)])``: the finished conversations of ``reasoner`` with
    ``strategy`` in the run that committed the gold option, in store order. Without a
    reasoner, the run's only ``hf`` reasoner that has any (InputError when none or several)."""
    with RunStore.open(run_dir, read_only=True) as store:
        good = [
            (key, t)
            for key, t in iter_transcripts(store)
            if t.strategy == strategy and t.correct and t.stop == "committed"
        ]
    names = sorted({t.reasoner for _, t in good if t.reasoner.startswith("hf:")})
    if reasoner is None:
        if len(names) != 1:
            found = ", ".join(names) or "none"
            raise InputError(
                f"name the reasoner to distill (--reasoner): the run's hf reasoners with "
                f"successful {strategy} conversations are {found}"
            )
        reasoner = names[0]
    chosen = [(key, t) for key, t in good if t.reasoner == reasoner]
    if not chosen:
        raise InputError(f"the run has no successful {strategy} conversation of {reasoner}")
    return reasoner, chosen


def _chat(transcript: Transcript) -> list[Message]:
    """The chat the reasoner read, ending with its own committing turn."""
    from clearsight.models.base import Message, TextPart
    from clearsight.probe.instances import Instance
    from clearsight.probe.loop import LoopSettings, conversation_messages

    instance = Instance(
        transcript.instance_id,
        "",
        transcript.question,
        transcript.options,
        transcript.gold,
        transcript.dataset,
        transcript.category,
    )
    settings = LoopSettings(
        transcript.strategy,
        budget=transcript.budget,
        signal=transcript.signal,  # type: ignore[arg-type]
    )
    *before, last = transcript.turns
    messages = conversation_messages(instance, before, settings, transcript.k)
    return [*messages, Message("assistant", (TextPart(last.raw),))]


def sft_example(
    backend: HfBackend, key: str, transcript: Transcript, max_tokens: int
) -> SftExample:
    """The transcript as token ids with labels on the reasoner's turns only (see the module
    docstring); InputError when the chat template does not render the conversation's
    prefixes as prefixes of the whole (then turns cannot be told apart)."""
    from clearsight.models.base import Message

    messages = _chat(transcript)
    render = backend.inputs.render
    # the whole chat: the last assistant turn closed by the template (a user turn follows)
    full = render([*messages, Message.user("(end)")])
    spans = []
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue
        start, upto = len(render(messages[:i])), render(messages[: i + 1])
        if not full.startswith(upto):
            raise InputError(
                f"{backend.name}: the chat template does not render a conversation's turns as "
                "prefixes of the whole; cannot mask them for training"
            )
        spans.append((start, len(upto)))
    enc = backend.tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
    labels = [IGNORE] * len(ids)
    for start, end in spans:
        for j, (a, _) in enumerate(offsets):
            if start <= a < end:
                labels[j] = ids[j]
            elif a >= end:  # the turn's end-of-turn token is the reasoner's to emit too
                if ids[j] in backend.eos_ids:
                    labels[j] = ids[j]
                    break
                if full[end:a].strip():
                    break
    last = max((j for j, label in enumerate(labels) if label != IGNORE), default=-1) + 1
    cut = min(last, max_tokens)
    return SftExample(key, transcript.instance_id, tuple(ids[:cut]), tuple(labels[:cut]))


def _split(n: int, share: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices of the training and validation conversations: a seeded permutation, the first
    ``round(share * n)`` (at least one when ``share > 0`` and ``n >= 2``) held out."""
    order = rng_for("distill split", seed).permutation(n).tolist()
    held = 0 if share == 0 or n < 2 else min(n - 1, max(1, round(share * n)))
    return sorted(order[held:]), sorted(order[:held])


def _loss(model: Any, example: SftExample) -> Any:
    """Mean cross-entropy over the example's labelled tokens (a tensor with its graph)."""
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor([example.input_ids], device=device)
    labels = torch.tensor([example.labels], device=device)
    return model(input_ids=ids, labels=labels).loss


def _mean_loss(model: Any, examples: Sequence[SftExample]) -> float | None:
    """Mean loss over ``examples`` without gradients (None for none)."""
    import torch

    if not examples:
        return None
    model.eval()
    with torch.no_grad():
        return float(np.mean([float(_loss(model, e)) for e in examples]))


def _train(
    model: Any, train: Sequence[SftExample], val: Sequence[SftExample], config: DistillConfig
) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
    """LoRA training; ``(history, chosen epoch, the chosen epoch's adapter weights)``."""
    import torch
    from peft import get_peft_model_state_dict

    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    history: list[dict[str, Any]] = []
    best: tuple[float, int, dict[str, Any]] | None = None
    order_rng = rng_for("distill order", config.seed)
    for epoch in range(1, config.epochs + 1):
        started = time.perf_counter()
        model.train()
        losses = []
        for i in order_rng.permutation(len(train)).tolist():
            loss = _loss(model, train[i])
            optim.zero_grad()
            loss.backward()
            optim.step()
            losses.append(float(loss.detach()))
        row = {
            "epoch": epoch,
            "train_loss_during": float(np.mean(losses)),
            "train_loss": _mean_loss(model, train),
            "val_loss": _mean_loss(model, val),
            "seconds": time.perf_counter() - started,
        }
        history.append(row)
        score = row["val_loss"] if row["val_loss"] is not None else -epoch  # no val: the last
        if best is None or score < best[0]:
            state = {k: v.detach().clone() for k, v in get_peft_model_state_dict(model).items()}
            best = (score, epoch, state)
    assert best is not None
    return history, best[1], best[2]


def distill(
    run_dir: Path | str, out: Path | str, config: DistillConfig | None = None
) -> DistillResult:
    """Distil the reasoner's successful trajectories of ``run_dir`` into a LoRA adapter in
    ``out`` (see the module docstring); ``out`` must not hold an adapter already."""
    import torch

    try:
        from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    except ImportError as exc:
        from clearsight.models import install_hint

        raise InputError(f"probe distill needs peft: {install_hint('train')}") from exc
    from clearsight.models import load_backend
    from clearsight.models.hf_backend import HfBackend

    config = config or DistillConfig()
    target = Path(out)
    if (target / ADAPTER_MANIFEST).exists():
        raise InputError(f"{target} already holds an adapter; choose another --out")
    reasoner, chosen = successful_trajectories(run_dir, config.reasoner, config.strategy)
    if adapter_manifest(reasoner.removeprefix("hf:")) is not None:
        raise InputError(f"{reasoner} is itself an adapter; distil from its base model's run")
    chosen = chosen[: config.limit]
    backend = load_backend(reasoner, {"device": config.device, "dtype": "float32"})
    if not isinstance(backend, HfBackend) or backend.capabilities.images:
        raise InputError(f"{reasoner}: self-distillation trains a text-only hf reasoner")
    examples = [sft_example(backend, k, t, config.max_tokens) for k, t in chosen]
    train_idx, val_idx = _split(len(examples), config.validation, config.seed)
    torch.manual_seed(config.seed)
    lora = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=config.dropout,
        target_modules=list(config.target_modules),
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(backend.model, lora)
    train = [examples[i] for i in train_idx]
    val = [examples[i] for i in val_idx]
    before = {"train_loss": _mean_loss(model, train), "val_loss": _mean_loss(model, val)}
    history, epoch, state = _train(model, train, val, config)
    set_peft_model_state_dict(model, state)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(target))
    manifest = _manifest(run_dir, reasoner, config, examples, (train, val), history, epoch)
    manifest["before"] = before
    (target / ADAPTER_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return DistillResult(target, manifest)


def _manifest(
    run_dir: Path | str,
    reasoner: str,
    config: DistillConfig,
    examples: Sequence[SftExample],
    split: tuple[Sequence[SftExample], Sequence[SftExample]],
    history: list[dict[str, Any]],
    epoch: int,
) -> dict[str, Any]:
    """The adapter's manifest (see the module docstring)."""
    import importlib.metadata

    versions = {}
    for package in ("torch", "transformers", "peft"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "unknown"
    train, val = split
    return {
        "base": reasoner,
        "run": str(Path(run_dir).resolve()),
        "data_hash": content_hash([[e.input_ids, e.labels] for e in examples]),
        "trajectories": len(examples),
        "labelled_tokens": sum(e.labelled for e in examples),
        "train": [{"key": e.key, "instance_id": e.instance_id} for e in train],
        "validation": [{"key": e.key, "instance_id": e.instance_id} for e in val],
        "config": config.model_dump(mode="json"),
        "seed": config.seed,
        "history": history,
        "chosen_epoch": epoch,
        "chosen_by": "lowest validation loss" if val else "last epoch (nothing held out)",
        "versions": versions,
    }


def adapter_bases(reasoners: Sequence[str]) -> dict[str, str]:
    """``{adapter reasoner: its base}`` for the reasoners that are distilled adapters
    (``hf:<directory>`` holding :data:`~clearsight.models.hf.ADAPTER_MANIFEST`)."""
    out = {}
    for name in reasoners:
        if name.startswith("hf:"):
            manifest = adapter_manifest(name.removeprefix("hf:"))
            if manifest is not None:
                out[name] = str(manifest["base"])
    return out


def distill_table(frame: pd.DataFrame, bases: Mapping[str, str]) -> pd.DataFrame:
    """Table 2: BP accuracy (%, over conversations) by dataset for each distilled reasoner
    (``bases``: adapter reasoner -> its base) and its base, run in the same probe run; one row
    per reasoner with the number of conversations. Empty unless some adapter ran BP."""
    if frame.empty or not bases:
        return pd.DataFrame()
    bp = frame[frame["strategy"] == "bp"]
    keep = set(bases) | set(bases.values())
    bp = bp[bp["reasoner"].isin(keep)]
    if not set(bp["reasoner"]) & set(bases):
        return pd.DataFrame()
    table = bp.pivot_table(index="reasoner", columns="dataset", values="correct", aggfunc="mean")
    table = table * 100
    table.insert(0, "conversations", bp.groupby("reasoner").size())
    table.insert(0, "distilled from", [bases.get(r, "") for r in table.index])
    return table.reset_index()
