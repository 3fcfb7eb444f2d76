"""Where a run's numbers came from, as its manifest records it: the configuration, the protocol,
the versions of the packages that compute them and the git revision of clearsight itself."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    SerializerFunctionWrapHandler,
    model_serializer,
)


class RunConfig(BaseModel):
    """A protocol's run configuration whose dump stays the same for runs stored before a field
    was added: a run's manifest holds its configuration as dumped and a resume compares that
    with the new dump (:meth:`clearsight.store.RunStore.begin_run`), so a field added later is
    left out of the dump while it holds its default — which must be what runs made before it
    did; a dump read back gives the same configuration.

    Subclasses name those fields in :attr:`added_later`. A float field of any subclass refuses
    NaN and infinities (subclasses' ``model_config`` is merged with this one): a run's numbers
    are finite before anything exists. A validation error's text never quotes the value given
    (a model URL may hold a password the credential check is about to refuse)."""

    model_config = ConfigDict(allow_inf_nan=False, hide_input_in_errors=True)

    added_later: ClassVar[tuple[str, ...]] = ()
    """Fields added after runs were stored whose default does what those runs did."""

    def unused_later_fields(self) -> frozenset[str]:
        """Fields added later that this configuration's records do not depend on at all (a
        choice about a condition the run does not show): left out of the dump whatever their
        value, so a run stored before them resumes. None by default."""
        return frozenset()

    @model_serializer(mode="wrap")
    def _without_later_fields_at_default(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            fields = type(self).model_fields
            for name in self.added_later:
                if getattr(self, name) == fields[name].get_default(call_default_factory=True):
                    data.pop(name, None)
            for name in self.unused_later_fields():
                data.pop(name, None)
        return data


def refuse_unknown_models(
    per_model: Mapping[str, object], models: Sequence[str], field: str
) -> None:
    """A ValueError (a configuration's field check) when a per-model map (``model_options``,
    ``reasoner_options``) names a model the run does not use: a typo of a model's name would
    otherwise be ignored and its options silently not applied."""
    unknown = sorted(set(per_model) - set(models))
    if unknown:
        raise ValueError(
            f"{field} names {', '.join(map(repr, unknown))}, not a model of the run "
            f"({', '.join(models)})"
        )


def refuse_bad_subsets(
    per_model: Mapping[str, Sequence[str]],
    models: Sequence[str],
    field: str,
    allowed: Sequence[str],
    allowed_name: str = "wordings",
) -> None:
    """A ValueError (a configuration's field check) where a per-model subset (``model_wordings``,
    ``model_conditions``) names a model not in ``models`` or gives one an empty subset or a
    name outside ``allowed`` (named ``allowed_name`` in the message)."""
    for model, subset in per_model.items():
        if model not in models:
            raise ValueError(f"{field} names {model!r}, which is not in models")
        if not subset or not set(subset) <= set(allowed):
            raise ValueError(
                f"{field}[{model!r}] must be a non-empty subset of {allowed_name} "
                f"{list(allowed)}, got {list(subset)}"
            )


def named_once(values: Sequence[Any] | None, field: str) -> None:
    """A ValueError (a configuration's field check) when ``field`` names an entry twice: a scene
    or a model given twice would plan its items twice under the same keys."""
    seen: set[Any] = set()
    for value in values or ():
        if value in seen:
            raise ValueError(f"{field} names {value!r} twice")
        seen.add(value)


def run_manifest(
    config: Mapping[str, JsonValue], protocol: str, **extra: object
) -> dict[str, object]:
    """The manifest a protocol's run begins with (:meth:`clearsight.store.RunStore.begin_run`):
    ``config`` in its JSON form, ``protocol``, package versions, git revision, then ``extra``
    (prompt hashes and whatever else the protocol's numbers depend on)."""
    return {
        "config": config,
        "protocol": protocol,
        "packages": package_versions(),
        "git_revision": git_revision(),
        **extra,
    }


def package_versions() -> dict[str, str]:
    """Versions of the packages that can change a run's numbers."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in (
        "clearsight",
        "numpy",
        "scipy",
        "numba",
        "pillow",
        "scikit-image",
        "torch",
        "transformers",
        "onnxruntime",
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    """The git commit of the clearsight source tree, when it is a checkout."""
    import subprocess

    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def source_digest(path: Path, suffixes: Sequence[str]) -> str:
    """The sha256 of a run's input source: of a file's bytes (what ``sha256sum`` prints), or of
    the files under a directory whose suffix is one of ``suffixes`` (their relative paths and
    bytes, in sorted order), so the manifest says exactly what the run read."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for file in sorted(f for f in path.rglob("*") if f.is_file() and f.suffix in suffixes):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()
