"""The run's manifest: what a run (or a resume) starts with, the entries the store keeps itself,
and the refusal of a run begun under another configuration or read as another protocol's.

The caller's manifest holds at least ``config`` (the resolved run configuration); the store adds
``config_hash`` (``content_hash`` of the config as stored), ``created_at`` (first start),
``schema_version``, ``starts`` (each start's time and config hash), ``history`` (the manifests a
changed configuration superseded) and ``plan`` (what the driver planned).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from pydantic import JsonValue

from clearsight.seeding import content_hash
from clearsight.store._json import dumps
from clearsight.store._records import utc_now
from clearsight.validate import InputError

__all__ = ["STORE_KEYS", "ConfigMismatch", "RunStart", "wrong_protocol"]

# Manifest keys the store writes itself; a caller's manifest may not use them.
STORE_KEYS = frozenset({"schema_version", "created_at", "config_hash", "starts", "history", "plan"})


class ConfigMismatch(InputError):  # noqa: N818 - the name the CLI and callers use
    """An existing run with records was started with a different configuration."""

    def __init__(self, run: Path, old_hash: str, new_hash: str, changed: list[str]) -> None:
        self.old_hash = old_hash
        self.new_hash = new_hash
        self.changed = changed
        detail = "; ".join(changed) if changed else "(no top-level key differs)"
        super().__init__(
            f"{run} already holds records made with config {old_hash}, but this run's config "
            f"hashes to {new_hash}. Top-level config keys that differ: {detail}. Rerun with "
            "--fresh to discard the old records and start over, or with --allow-mismatch to "
            "keep them and continue under the new config (the old manifest is kept in history)."
        )


def wrong_protocol(made_by: object, protocols: tuple[str, ...], run: Path) -> InputError | None:
    """The refusal of a run made by protocol ``made_by`` read as one of ``protocols`` (None when
    it is one of them, or names none); it names ``clearsight report``, which asks the run's own
    protocol (:mod:`clearsight.faces`)."""
    if made_by is None or made_by in protocols:
        return None
    return InputError(
        f"{run} is a {made_by} run, not a {protocols[0]} run: use clearsight report {run}"
    )


class Start(TypedDict):
    """One start of a run, as ``starts`` lists it."""

    started_at: str
    config_hash: str


class _StoreEntries(TypedDict):
    """The entries a start writes besides the caller's."""

    config_hash: str
    starts: list[Start]
    history: list[dict[str, JsonValue]]
    created_at: str


@dataclass(frozen=True)
class RunStart:
    """A run's start with the caller's manifest: its entries checked and encoded, the config
    as it reads back, its hash and the moment (see :meth:`RunStore.begin_run`)."""

    config: Any
    encoded: dict[str, str]
    config_hash: str
    now: str

    @classmethod
    def of(cls, manifest: Mapping[str, object]) -> RunStart:
        """Check and encode the caller's ``manifest`` (InputError: no config, or a key the store
        writes itself, or a value that is not JSON)."""
        entries = dict(manifest)
        if "config" not in entries:
            raise InputError("the manifest must hold 'config', the resolved run configuration")
        if reserved := sorted(entries.keys() & STORE_KEYS):
            raise InputError(f"manifest keys {reserved} are written by the store itself")
        # Store and hash the config as it reads back, so content_hash(manifest()["config"]) holds.
        entries["config"] = json.loads(dumps(entries["config"], "config"))
        encoded = {key: dumps(value, f"manifest entry {key!r}") for key, value in entries.items()}
        return cls(entries["config"], encoded, content_hash(entries["config"]), utc_now())

    def rows(
        self,
        stored: Mapping[str, Any],
        has_records: Callable[[], bool],
        allow_mismatch: bool,
        path: Path,
    ) -> dict[str, str]:
        """The manifest's rows after this start, given the ``stored`` manifest of the run at
        ``path``: ConfigMismatch when the config changed, records exist and the mismatch is not
        allowed; else a changed config moves the stored manifest into ``history``."""
        old_hash = stored.get("config_hash")
        history = list(stored.get("history", []))
        if old_hash is not None and old_hash != self.config_hash:
            if not allow_mismatch and has_records():
                changed = _config_diff(stored.get("config"), self.config)
                raise ConfigMismatch(path, old_hash, self.config_hash, changed)
            previous = {k: v for k, v in stored.items() if k not in STORE_KEYS - {"config_hash"}}
            history.append({**previous, "superseded_at": self.now})
        start = Start(started_at=self.now, config_hash=self.config_hash)
        ours: _StoreEntries = {
            "config_hash": self.config_hash,
            "starts": [*stored.get("starts", []), start],
            "history": history,
            "created_at": stored.get("created_at", self.now),
        }
        return {**self.encoded, **{k: dumps(v, k) for k, v in ours.items()}}


def _config_diff(old: Any, new: Any, limit: int = 8) -> list[str]:
    """Short descriptions of the top-level config keys that differ (at most ``limit``)."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return [f"config: {_short(old)} -> {_short(new)}"]
    changed = []
    for key in sorted(old.keys() | new.keys()):
        if key not in new:
            changed.append(f"{key} removed (was {_short(old[key])})")
        elif key not in old:
            changed.append(f"{key} added ({_short(new[key])})")
        elif old[key] != new[key]:
            changed.append(f"{key}: {_short(old[key])} -> {_short(new[key])}")
    if len(changed) > limit:
        changed = [*changed[:limit], f"... and {len(changed) - limit} more"]
    return changed


def _short(value: Any, width: int = 60) -> str:
    """A one-line JSON rendering of ``value``, cut to ``width`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."
