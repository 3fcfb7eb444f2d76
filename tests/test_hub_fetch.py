"""``clearsight fetch --model`` / ``--depth``: verifying a snapshot in a Hugging Face cache laid
out offline as the hub lays it out (``models--org--name/{refs,blobs,snapshots}``), against its
blob names and against the hub's listing, and the command's lines offline."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.fetch.hub import Fetched, cached_snapshot, fetch_model, hub_id_of, verify_snapshot
from clearsight.validate import InputError

REPO = "org/tiny-vlm"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
FILES = {
    "config.json": b'{"model_type": "idefics3"}\n',
    "tokenizer.json": b'{"version": "1.0"}\n',
    "model.safetensors": bytes(range(256)) * 64,
    "sub/preprocessor_config.json": b"{}\n",
}
LFS = {"model.safetensors"}


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _hub_hash(name: str, data: bytes) -> str:
    return hashlib.sha256(data).hexdigest() if name in LFS else _git_sha1(data)


def lay_out(cache: Path, repo: str = REPO, files: dict[str, bytes] = FILES) -> Path:
    """A snapshot of ``files`` in ``cache`` as huggingface_hub writes one: blobs named by the
    hub's hash, relative links from ``snapshots/<commit>/``, ``refs/main``."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    (folder / "blobs").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    snapshot = folder / "snapshots" / COMMIT
    for name, data in files.items():
        blob = folder / "blobs" / _hub_hash(name, data)
        blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot


def siblings(files: dict[str, bytes] = FILES) -> list[Any]:
    """The hub's listing of ``files`` (``model_info(..., files_metadata=True).siblings``)."""
    from huggingface_hub.hf_api import BlobLfsInfo, RepoSibling

    out = []
    for name, data in files.items():
        lfs = BlobLfsInfo(len(data), hashlib.sha256(data).hexdigest(), 134) if name in LFS else None
        out.append(RepoSibling(name, len(data), _git_sha1(data), lfs))
    return out


def test_the_cached_snapshot_is_found_by_branch_and_by_commit(tmp_path: Path) -> None:
    snapshot = lay_out(tmp_path)
    assert cached_snapshot(REPO, cache_dir=tmp_path) == snapshot
    assert cached_snapshot(REPO, COMMIT, cache_dir=tmp_path) == snapshot
    assert cached_snapshot(REPO, "dev", cache_dir=tmp_path) is None
    assert cached_snapshot("org/other", cache_dir=tmp_path) is None
    assert cached_snapshot(REPO, "f" * 40, cache_dir=tmp_path) is None


def test_a_cached_snapshot_verifies_offline_against_its_blob_names(tmp_path: Path) -> None:
    snap = verify_snapshot(REPO, lay_out(tmp_path))
    assert (snap.files, snap.size, snap.revision) == (4, sum(map(len, FILES.values())), COMMIT)
    assert snap.checked == "blob names"
    line = snap.describe("ready")
    assert line.startswith(f"ready: {REPO} at {COMMIT[:12]} in ")
    assert "4 files, 16.4 kB" in line


@pytest.mark.parametrize("damaged", ["model.safetensors", "tokenizer.json"])
def test_a_damaged_blob_is_named(tmp_path: Path, damaged: str) -> None:
    snapshot = lay_out(tmp_path)
    blob = (snapshot / damaged).resolve()
    blob.write_bytes(blob.read_bytes()[:-1] + b"!")
    with pytest.raises(InputError, match=rf"{REPO}: {damaged} does not hash to [0-9a-f]+"):
        verify_snapshot(REPO, snapshot)


def test_a_snapshot_without_config_or_weights_is_not_a_model(tmp_path: Path) -> None:
    no_config = {k: v for k, v in FILES.items() if k != "config.json"}
    with pytest.raises(InputError, match=r"no config\.json"):
        verify_snapshot(REPO, lay_out(tmp_path / "a", files=no_config))
    no_weights = {k: v for k, v in FILES.items() if k != "model.safetensors"}
    with pytest.raises(InputError, match=r"no weights file \(\.safetensors"):
        verify_snapshot(REPO, lay_out(tmp_path / "b", files=no_weights))


def test_a_snapshot_verifies_against_the_hubs_listing(tmp_path: Path) -> None:
    snapshot = lay_out(tmp_path)
    snap = verify_snapshot(REPO, snapshot, siblings())
    assert (snap.files, snap.checked) == (4, "hub")
    listed = {**FILES, "extra.bin": b"x"}
    with pytest.raises(InputError, match=r"extra\.bin is missing"):
        verify_snapshot(REPO, snapshot, siblings(listed))
    bigger = siblings()
    bigger[0].size += 1
    with pytest.raises(InputError, match=r"config.json has 27 bytes, the hub lists 28"):
        verify_snapshot(REPO, snapshot, bigger)
    other = {**FILES, "model.safetensors": b"other weights"}
    wrong = [s for s in siblings(other) if s.rfilename == "model.safetensors"]
    wrong[0].size = len(FILES["model.safetensors"])
    with pytest.raises(InputError, match=r"model\.safetensors does not hash to"):
        verify_snapshot(REPO, snapshot, [*siblings()[:1], *wrong])


def test_fetch_downloads_then_verifies_against_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub as hub

    calls: list[tuple[str, Any]] = []

    class Info:
        sha = COMMIT
        siblings = siblings()

    def model_info(self: Any, repo_id: str, **kw: Any) -> Info:
        calls.append(("info", kw["revision"]))
        assert kw["files_metadata"] is True
        return Info()

    def snapshot_download(repo_id: str, **kw: Any) -> str:
        calls.append(("download", kw["revision"]))
        return str(lay_out(kw["cache_dir"], repo_id))

    monkeypatch.setattr(hub.HfApi, "model_info", model_info)
    monkeypatch.setattr(hub, "snapshot_download", snapshot_download)
    got = fetch_model(REPO, cache_dir=tmp_path)
    assert calls == [("info", None), ("download", None)]  # by branch: refs/main is written
    assert (got.status, got.snapshot.checked, got.offline_reason) == ("fetched", "hub", None)
    assert cached_snapshot(REPO, cache_dir=tmp_path) == got.snapshot.path


def test_offline_a_cached_model_is_ready_and_a_missing_one_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub as hub

    def unreachable(self: Any, repo_id: str, **kw: Any) -> None:
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr(hub.HfApi, "model_info", unreachable)
    with pytest.raises(InputError) as e:
        fetch_model(REPO, cache_dir=tmp_path)
    message = str(e.value)
    assert "\n" not in message
    assert "the Hugging Face hub is not reachable ([Errno -2] Name or service not known)" in message
    assert f"`clearsight fetch --model {REPO}`" in message
    assert "copy its models--org--tiny-vlm folder into" in message
    lay_out(tmp_path)
    got = fetch_model(REPO, cache_dir=tmp_path)
    assert isinstance(got, Fetched)
    assert (got.status, got.snapshot.checked) == ("ready", "blob names")
    reason = "(the hub was not reached: [Errno -2] Name or service not known)"
    assert got.describe().endswith(reason)


def test_a_preset_name_fetches_its_hub_id() -> None:
    assert hub_id_of("qwen3-vl-8b") == "Qwen/Qwen3-VL-8B-Instruct"
    assert hub_id_of("a/b") == "a/b"
    with pytest.raises(InputError, match="not on the Hugging Face hub"):
        hub_id_of("vl-calibration-4b")
    with pytest.raises(InputError, match="neither a hub id"):
        hub_id_of("qwen")


def _fetch_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``clearsight fetch ARGS`` with huggingface_hub's own offline mode and ``tmp_path`` as
    the cache: the library's real behaviour, no network needed or used."""
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).parents[1] / "src"),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path),
    }
    code = "from clearsight.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, "fetch", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_the_command_offline_exits_2_with_one_line_then_0_once_cached(tmp_path: Path) -> None:
    missing = _fetch_cli(tmp_path, "--depth")
    print(missing.stderr)
    assert missing.returncode == 2
    [line] = missing.stderr.strip().splitlines()
    assert line.startswith(
        "error: cannot fetch depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf: the "
        "Hugging Face hub is not reachable"
    )
    assert missing.stdout == ""
    lay_out(tmp_path, "depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf")
    ready = _fetch_cli(tmp_path, "--depth")
    assert ready.returncode == 0, ready.stderr
    assert ready.stdout.startswith(
        "ready: depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf at 0123456789ab"
    )


def test_the_loading_side_finds_what_the_layout_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub's own cache reader (what transformers' local_files_only loading uses)
    finds the files of a snapshot laid out here, and a COCO sweep's depth check passes on the
    cache that holds the depth model and stops on one that does not."""
    import huggingface_hub.constants as constants
    from huggingface_hub import try_to_load_from_cache

    from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL
    from clearsight.sweep.plan import _require_depth_model

    snapshot = lay_out(tmp_path, DEFAULT_DEPTH_MODEL)
    found = try_to_load_from_cache(DEFAULT_DEPTH_MODEL, "config.json", cache_dir=tmp_path)
    assert found == str(snapshot / "config.json")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    _require_depth_model(DEFAULT_DEPTH_MODEL)
    _require_depth_model("assumed:40")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(InputError, match=r"`clearsight fetch --depth`"):
        _require_depth_model(DEFAULT_DEPTH_MODEL)
    with pytest.raises(InputError, match=r"`clearsight fetch --model org/other-depth`"):
        _require_depth_model("org/other-depth")


@settings(max_examples=60, deadline=None)
@given(
    st.text(st.characters(codec="ascii"), max_size=300)
    | st.integers(97, 6000).map(lambda n: "org/" + "x" * n)
)
def test_a_model_id_is_a_hub_id_or_one_input_error(name: str) -> None:
    """A --model that cannot be a hub id (too long for the hub and for a file name in the
    cache, characters the hub refuses) is refused as bad input, never read as a path (a 5,000
    character id was an OSError, exit 4)."""
    try:
        hub_id = hub_id_of(name)
    except InputError as exc:
        error = str(exc)
    else:
        error = ""
        org, _, repo = hub_id.partition("/")
        for part in (org, repo):
            assert re.fullmatch(r"[A-Za-z0-9_.-]{1,96}", part)
            assert "--" not in part
            assert ".." not in part
            assert not part.startswith(("-", "."))
            assert not part.endswith(("-", "."))
    assert "\n" not in error


def test_a_very_long_model_id_exits_2_with_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    result = CliRunner().invoke(app, ["fetch", "--model", "org/" + "x" * 5000])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: --model 'org/xxxx")
    assert "is neither a hub id (ORG/NAME" in line
