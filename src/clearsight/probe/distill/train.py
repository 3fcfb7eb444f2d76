"""Self-distillation (the paper's §4.3, Table 2): LoRA fine-tuning of a reasoner on its own
successful belief-state (BP) trajectories.

**Data.** From a probe run, the finished conversations of one ``hf`` reasoner with strategy
``bp`` that committed the gold option, shown the true u (``signal``: the ablation's
conversations are not distilled), of the held-out split of ``datasets`` (a seeded hash of each
instance id below ``held_out``; the paper's: "a held-out SeedBench split", its share
clearsight's), as many from each sensor (the paper's balance; the ``balance`` option), each one
chat exactly as the reasoner read it, tokenised with labels on
the reasoner's own turns only (:mod:`clearsight.probe.distill.sft`).

**Training.** LoRA adapters (``peft``; rank, alpha, dropout and target modules configurable;
the paper's rank 16, alpha 32, 7 epochs are the defaults) on the frozen base, AdamW, one
conversation per step, token-level cross-entropy over the labelled tokens, float32 weights on
the CPU by default (``device``). A seeded
``validation`` share of the conversations (at least one when there are two or more) is held
out; after each epoch the mean loss on the training and validation conversations is recorded,
and the adapter of the epoch with the lowest validation loss is the one saved (the last epoch
when nothing could be held out; the manifest says which).

**Output.** ``out/`` holds the adapter (``adapter_model.safetensors``, ``adapter_config.json``) and
:data:`~clearsight.models.hf.ADAPTER_MANIFEST`: the base model spec, the run, the trajectories' keys
and instance ids (train / validation), the data hash, every hyper-parameter, the seed, the loss
history and the chosen epoch. ``hf:<out>`` then loads the base with the adapter merged, a reasoner
like any other, so one probe run with both ``--reasoner hf:<base>`` and ``--reasoner hf:<out>``
gives Table 2's BP accuracy before and after
(:func:`~clearsight.probe.distill.analysis.distill_table`), on instances the adapter never saw.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clearsight.models.hf import ADAPTER_MANIFEST, adapter_manifest
from clearsight.paths import write_target
from clearsight.probe.distill.sft import (
    SftExample,
    balance_sensors,
    distillation_set,
    sft_example,
    successful_trajectories,
)
from clearsight.probe.specs import Signal
from clearsight.seeding import content_hash, rng_for
from clearsight.validate import InputError

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["DistillConfig", "DistillResult", "distill"]


class DistillConfig(BaseModel):
    """What ``clearsight probe distill`` trains (the paper's setting as the defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reasoner: str | None = Field(
        None,
        description="The hf reasoner whose trajectories are distilled (and the base model); "
        "None: the run's only hf reasoner with successful BP conversations.",
    )
    strategy: str = Field("bp", description="The strategy of the trajectories (the paper: BP).")
    signal: Signal = Field(
        "true",
        description="The consistency signal of the trajectories: true u, the ablation's none and "
        "random u left out (clearsight's reading of the paper's BP traces).",
    )
    datasets: tuple[str, ...] = Field(
        ("seedbench",),
        description="Datasets whose instances may train (the paper's: SeedBench).",
    )
    held_out: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Share of those datasets' instances in the held-out distillation split, "
        "by a seeded hash of each instance id (clearsight's share; 1: all of them). Table 2 "
        "compares base and adapter on the instances the adapter did not train on.",
    )
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
    balance: bool = Field(
        True,
        description="Take as many trajectories from each sensor (the paper's, balanced across "
        "its two sensors; with --limit, limit / sensors each); false: all, in store order.",
    )
    seed: int = Field(0, description="Seed of the split, the order and the adapter's init.")
    device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        "cpu", description="Where to train (the hf backend's device option); float32 weights."
    )


class EpochLoss(TypedDict):
    """One epoch of training: its mean loss while training, then the mean losses on the
    training and validation conversations after it (None: none held out), and its seconds."""

    epoch: int
    train_loss_during: float
    train_loss: float | None
    val_loss: float | None
    seconds: float


class Losses(TypedDict):
    """Mean losses on the training and validation conversations (None: none)."""

    train_loss: float | None
    val_loss: float | None


class Trajectory(TypedDict):
    """A trajectory trained on or held out: its record's key and its instance."""

    key: str
    instance_id: str


class AdapterManifest(TypedDict):
    """What :data:`~clearsight.models.hf.ADAPTER_MANIFEST` holds (the module docstring):
    the base model, the run, the data's hash, the trajectories, the configuration, the loss
    history, the epoch chosen and why, the libraries' versions, the losses before training
    and the trajectories per sensor."""

    base: str
    run: str
    data_hash: str
    trajectories: int
    labelled_tokens: int
    train: list[Trajectory]
    validation: list[Trajectory]
    config: dict[str, Any]
    seed: int
    history: list[EpochLoss]
    chosen_epoch: int
    chosen_by: str
    versions: dict[str, str]
    before: NotRequired[Losses]
    sensors: NotRequired[dict[str, int]]


@dataclass(frozen=True)
class DistillResult:
    """What :func:`distill` wrote: the adapter directory and its manifest."""

    out: Path
    manifest: AdapterManifest


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
) -> tuple[list[EpochLoss], int, dict[str, Tensor]]:
    """LoRA training; ``(history, chosen epoch, the chosen epoch's adapter weights)``."""
    import torch
    from peft import get_peft_model_state_dict

    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    history: list[EpochLoss] = []
    best: tuple[float, int, dict[str, Tensor]] | None = None
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
        row: EpochLoss = {
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
        from peft import set_peft_model_state_dict
    except ImportError as exc:
        from clearsight.models import install_hint

        raise InputError(f"probe distill needs peft: {install_hint('train')}") from exc
    from clearsight.models import load_backend
    from clearsight.models.hf_backend import HfBackend

    config = config or DistillConfig()
    target = Path(out)
    if (target / ADAPTER_MANIFEST).exists():
        raise InputError(f"{target} already holds an adapter; choose another --out")
    reasoner, chosen = successful_trajectories(
        run_dir,
        config.reasoner,
        config.strategy,
        *distillation_set(config.signal, config.datasets, config.held_out, config.seed),
    )
    if adapter_manifest(reasoner.removeprefix("hf:")) is not None:
        raise InputError(f"{reasoner} is itself an adapter; distil from its base model's run")
    chosen = balance_sensors(chosen, config.limit) if config.balance else chosen[: config.limit]
    backend = load_backend(reasoner, {"device": config.device, "dtype": "float32"})
    if not isinstance(backend, HfBackend) or backend.capabilities.images:
        raise InputError(f"{reasoner}: self-distillation trains a text-only hf reasoner")
    examples = [sft_example(backend, k, t, config.max_tokens) for k, t in chosen]
    train_idx, val_idx = _split(len(examples), config.validation, config.seed)
    torch.manual_seed(config.seed)
    model = _with_lora(backend.model, config)
    train = [examples[i] for i in train_idx]
    val = [examples[i] for i in val_idx]
    before: Losses = {"train_loss": _mean_loss(model, train), "val_loss": _mean_loss(model, val)}
    history, epoch, state = _train(model, train, val, config)
    set_peft_model_state_dict(model, state)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(target))
    manifest = _manifest(run_dir, reasoner, config, examples, (train, val), history, epoch)
    manifest["before"] = before
    manifest["sensors"] = dict(sorted(Counter(t.sensor for _, t in chosen).items()))
    write_target(target / ADAPTER_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return DistillResult(target, manifest)


def _with_lora(model: Any, config: DistillConfig) -> Any:
    """``model`` wrapped by peft with fresh LoRA adapters of ``config``'s rank, alpha and
    dropout on its ``target_modules``: only these are trained."""
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=config.dropout,
        target_modules=list(config.target_modules),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def _manifest(
    run_dir: Path | str,
    reasoner: str,
    config: DistillConfig,
    examples: Sequence[SftExample],
    split: tuple[Sequence[SftExample], Sequence[SftExample]],
    history: list[EpochLoss],
    epoch: int,
) -> AdapterManifest:
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
