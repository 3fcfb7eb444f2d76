"""The probe's generation limits, per model: how many tokens a reasoner turn and a sensor sample
may generate, and how long a reasoner's prompt may grow (its context window).

The paper gives no token cap: its traces show sensor replies of about 90 tokens and reasoner
turns of several sentences, and a conversation ends when it outgrows the reasoner's context
window. So each limit is, in order: the run's own value where the config gives one, else the
model's preset's (``probe_turn_tokens``, ``probe_sample_tokens``, ``context_tokens`` in
``models/presets.yaml``), else — for the context window — the model's own (its checkpoint's
``config.json``, ``max_position_embeddings``), else clearsight's default below. Every default
here is clearsight's choice, not the paper's, and the manifest's ``limits`` entry records
each model's value and where it came from (:func:`limits_manifest`).

The context check counts characters, not tokens (no backend exposes its tokenizer to the
loop): a prompt may hold ``(window - turn tokens) x`` :data:`CHARS_PER_TOKEN` characters — at
3 characters a token, fewer than English text averages (about 4), so a conversation ends
before it overflows the window rather than after.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import JsonValue

from clearsight.models.presets import PRESET_KEY, Preset, find_preset

if TYPE_CHECKING:
    from clearsight.probe.config import ProbeConfig

__all__ = [
    "CHARS_PER_TOKEN",
    "CONTEXT_TOKENS",
    "SAMPLE_TOKENS",
    "TURN_TOKENS",
    "Limit",
    "context_chars",
    "limits_manifest",
    "limits_statement",
    "sample_tokens",
    "turn_tokens",
]

#: Tokens of a reasoner turn where neither the run nor a preset says (clearsight's choice: room
#: for a multi-sentence turn; a thinking reasoner's preset gives more).
TURN_TOKENS = 1024
#: Tokens of a sensor sample where neither the run nor a preset says (clearsight's choice: the
#: paper's sensor replies run to about 90 tokens).
SAMPLE_TOKENS = 256
#: A reasoner's context window where neither a preset nor its checkpoint says (clearsight's).
CONTEXT_TOKENS = 8192
#: Characters counted per token of the context window (module docstring).
CHARS_PER_TOKEN = 3

Field = Literal["probe_turn_tokens", "probe_sample_tokens", "context_tokens"]


@dataclass(frozen=True)
class Limit:
    """One limit of one model and where it comes from: ``run``, ``preset <name>``,
    ``model config.json`` or ``clearsight default``."""

    value: int
    source: str


def _preset(model: str, options: Mapping[str, JsonValue]) -> Preset | None:
    """The preset of ``model``: the one its options name, else its hub id's (for an
    ``openai:URL#id`` model, the served id's)."""
    name = options.get(PRESET_KEY)
    if isinstance(name, str):
        return None if name == "none" else find_preset(name)
    arg = model.partition(":")[2]
    return find_preset(arg.rpartition("#")[2] if "#" in arg else arg) if arg else None


def _from_preset(
    model: str, options: Mapping[str, JsonValue], field: Field, given: int | None
) -> Limit | None:
    """The run's value, else the preset's ``field``; None when neither says."""
    if given is not None:
        return Limit(given, "run")
    preset = _preset(model, options)
    value = getattr(preset, field) if preset is not None else None
    return Limit(int(value), f"preset {preset.name}") if preset and value else None


def turn_tokens(model: str, options: Mapping[str, JsonValue], given: int | None) -> Limit:
    """The tokens a turn of the reasoner ``model`` may generate (module docstring)."""
    found = _from_preset(model, options, "probe_turn_tokens", given)
    return found or Limit(TURN_TOKENS, "clearsight default")


def sample_tokens(model: str, options: Mapping[str, JsonValue], given: int | None) -> Limit:
    """The tokens a sample of the sensor ``model`` may generate (module docstring)."""
    found = _from_preset(model, options, "probe_sample_tokens", given)
    return found or Limit(SAMPLE_TOKENS, "clearsight default")


def _config_path(arg: str) -> Path | None:
    """The ``config.json`` of the checkpoint an ``hf:``/``vllm:`` model names: a local
    directory, the embedded SmolLM2's extracted copy, or a hub id already in the Hugging Face
    cache (never fetched); None when none is at hand."""
    from clearsight.models.embedded import SMOLLM2_ALIAS

    if arg == SMOLLM2_ALIAS:
        from clearsight.cache import cache_dir

        return cache_dir() / "models" / SMOLLM2_ALIAS / "config.json"
    local = Path(arg).expanduser() / "config.json"
    if local.is_file() or arg.count("/") != 1 or arg.startswith((".", "/", "~")):
        return local
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # the hub extra not installed: no cache to look in
        return None
    cached = try_to_load_from_cache(arg, "config.json")
    return Path(cached) if isinstance(cached, str) else None


def _config_window(model: str) -> int | None:
    """``max_position_embeddings`` of the checkpoint's ``config.json`` (its language model's
    for a VLM, :func:`_config_path`); None when there is none to read."""
    prefix, _, arg = model.partition(":")
    path = _config_path(arg) if prefix in ("hf", "vllm") and arg else None
    try:
        doc = json.loads(path.read_text(encoding="utf-8")) if path is not None else {}
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    nested = doc.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else doc
    value = text.get("max_position_embeddings", doc.get("max_position_embeddings"))
    return value if isinstance(value, int) and value > 0 else None


def context_window(model: str, options: Mapping[str, JsonValue]) -> Limit:
    """The reasoner ``model``'s context window in tokens: its preset's, else its checkpoint's,
    else :data:`CONTEXT_TOKENS`."""
    found = _from_preset(model, options, "context_tokens", None)
    if found is not None:
        return found
    own = _config_window(model)
    return Limit(own, "model config.json") if own else Limit(CONTEXT_TOKENS, "clearsight default")


def context_chars(
    model: str, options: Mapping[str, JsonValue], given_tokens: int | None, turn: int
) -> Limit:
    """The most characters of a prompt of the reasoner ``model``: the window (the run's
    ``context_tokens``, else :func:`context_window`) less one turn's tokens, times
    :data:`CHARS_PER_TOKEN` (at least 200)."""
    window = Limit(given_tokens, "run") if given_tokens else context_window(model, options)
    chars = max(200, (window.value - turn) * CHARS_PER_TOKEN)
    return Limit(chars, f"{window.value} tokens ({window.source})")


def limits_manifest(config: ProbeConfig) -> dict[str, JsonValue]:
    """The manifest's ``limits``: per reasoner its turn tokens and prompt characters with the
    context window they come from, for the sensor its sample tokens, each with its source."""
    from clearsight.models.resolve import resolve_options

    per_reasoner: dict[str, JsonValue] = {}
    for model in config.reasoners:
        options = resolve_options(model, config.reasoner_options.get(model, {}))
        turn = turn_tokens(model, options, config.max_new_tokens)
        chars = context_chars(model, options, config.context_tokens, turn.value)
        per_reasoner[model] = {
            "turn_tokens": turn.value,
            "turn_tokens_source": turn.source,
            "context_chars": chars.value,
            "context_window": chars.source,
        }
    sensor = resolve_options(config.sensor, config.sensor_options)
    sample = sample_tokens(config.sensor, sensor, config.sensor_max_new_tokens)
    return {
        "reasoners": per_reasoner,
        "sensor": {"sample_tokens": sample.value, "sample_tokens_source": sample.source},
    }


def limits_statement(manifest: Mapping[str, Any]) -> str:
    """What a run's manifest says of its generation limits, as the report states them (a run
    made before they were per model: its config's fixed limits)."""
    limits = manifest.get("limits")
    if not isinstance(limits, Mapping):
        config = manifest.get("config") or {}
        return (
            f"every reasoner {config.get('max_new_tokens')} tokens a turn, prompts up to "
            f"{config.get('context_chars')} characters; sensor samples "
            f"{config.get('sensor_max_new_tokens')} tokens (limits fixed for every model when "
            "this run was made)"
        )
    parts = [
        f"{model} {r['turn_tokens']} tokens a turn ({r['turn_tokens_source']}), prompts up to "
        f"{r['context_chars']} characters (a window of {r['context_window']})"
        for model, r in limits["reasoners"].items()
    ]
    sensor = limits["sensor"]
    parts.append(
        f"sensor samples {sensor['sample_tokens']} tokens ({sensor['sample_tokens_source']})"
    )
    return "; ".join(parts)
