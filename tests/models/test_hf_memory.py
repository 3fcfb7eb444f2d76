"""``batch_size: auto`` (:mod:`clearsight.models.hf_memory`): the rows that fit, found once per
image size and recorded; on the CPU a stated fixed size."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from clearsight.models import Message, Request
from clearsight.models.hf_options import parse_options
from clearsight.validate import InputError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from clearsight.models import hf_memory  # noqa: E402
from clearsight.models.hf import make_hf  # noqa: E402


def test_batch_size_takes_auto_or_a_positive_int() -> None:
    assert parse_options({"batch_size": "auto"}).batch_size == "auto"
    assert parse_options({"batch_size": 3}).batch_size == 3
    for bad in (0, "big", -1):
        with pytest.raises(InputError, match="batch_size"):
            parse_options({"batch_size": bad})


def test_rows_that_fit_are_the_headroom_over_the_per_row_peak() -> None:
    gib = 2.0**30
    assert hf_memory.fit_rows(per_row=0.5 * gib, free=10 * gib) == 16  # 0.8 * 10 / 0.5
    assert hf_memory.fit_rows(per_row=20 * gib, free=10 * gib) == 1
    assert hf_memory.fit_rows(per_row=1.0, free=10 * gib) == hf_memory.MAX_ROWS


class _FakeCuda:
    """The allocator figures a CUDA device would report: 1 GiB held, 100 MiB per probed row
    above it, 3 GiB free."""

    def __init__(self) -> None:
        self.rows = 0
        self.probes = 0

    def synchronize(self, device: Any) -> None:
        pass

    def memory_allocated(self, device: Any) -> int:
        return 2**30

    def reset_peak_memory_stats(self, device: Any) -> None:
        self.probes += 1

    def max_memory_allocated(self, device: Any) -> int:
        return 2**30 + self.rows * 100 * 2**20

    def mem_get_info(self, device: Any) -> tuple[int, int]:
        return 3 * 2**30, 80 * 2**30


def test_on_cuda_a_probe_batch_sizes_the_rest_once_per_image_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cuda = _FakeCuda()
    monkeypatch.setattr(hf_memory, "torch", SimpleNamespace(cuda=cuda))

    def chunk(items: list[Any]) -> list[str]:
        cuda.rows = len(items)
        return [f"out{i}" for i in range(len(items))]

    backend = SimpleNamespace(device=SimpleNamespace(type="cuda"), batch_sizes={}, _chunk=chunk)
    items = [SimpleNamespace(images=[SimpleNamespace(size=(64, 48))]) for _ in range(10)]
    rows, probed_outs = hf_memory.auto_rows(backend, items)  # type: ignore[arg-type]
    probed: dict[int, Any] = dict(probed_outs)
    assert rows == int(0.8 * 3 * 1024 // 100)  # 24 rows of 100 MiB in 0.8 of 3 GiB
    assert probed == {i: f"out{i}" for i in range(hf_memory.PROBE_ROWS)}
    assert backend.batch_sizes["64x48"]["rows"] == rows
    again, none = hf_memory.auto_rows(backend, items)  # type: ignore[arg-type]
    assert (again, none, cuda.probes) == (rows, {}, 1)


def test_auto_on_the_cpu_is_the_host_size_recorded_with_its_reason(
    tiny_idefics3_path: Path,
) -> None:
    backend = make_hf(str(tiny_idefics3_path), {"batch_size": "auto", "device": "cpu"})
    image = (np.random.default_rng(0).random((30, 40, 3)) * 255).astype(np.uint8)
    requests = [
        Request((Message.user(image, f"Is it {w}?"),), candidates=("A", "B"), generate=False)
        for w in ("a cat", "a dog", "blue")
    ]
    fixed = make_hf(str(tiny_idefics3_path), {"batch_size": 2, "device": "cpu"})
    got, want = backend.complete(requests), fixed.complete(requests)
    for a, b in zip(got, want, strict=True):
        assert a.candidate_probs is not None
        assert b.candidate_probs is not None
        np.testing.assert_allclose(
            list(a.candidate_probs.values()), list(b.candidate_probs.values()), rtol=1e-4
        )
    found = backend.info["batch_sizes"]
    assert found == {"40x30": {"rows": hf_memory.HOST_ROWS, "how": found["40x30"]["how"]}}
    assert found["40x30"]["how"].startswith("cpu: device memory not measured")
    assert backend.info["batch_size"] == "auto"


def test_a_runs_manifest_holds_the_batch_sizes_auto_chose_serial_and_in_a_pool(
    tiny_idefics3_path: Path, tmp_path: Path
) -> None:
    """After the first batch the manifest's ``loaded_models`` entry holds what ``auto`` chose
    per image size: with the serial executor the very choices of the backend that ran (this
    process's shared one), and the same from a process pool, whose workers send theirs back
    with their units' records."""
    from clearsight.models import attention, shared_backend
    from clearsight.models.resolve import backend_options
    from clearsight.store import run_manifest
    from clearsight.sweep.protocol import run_sweep
    from fixtures.sweep_runs import auto_sized_sweep

    model = f"hf:{tiny_idefics3_path}"
    cfg = auto_sized_sweep(model)
    with attention.by_family(True):  # the options a new run resolves (its family's attention)
        options = backend_options(model, cfg.model_options[model])
    chosen = {}
    for executor in ("serial", "process"):
        summary = run_sweep(cfg, tmp_path / executor, executor=executor, workers=2, progress=False)
        assert summary.failed == 0
        assert summary.ok > 0
        loaded = run_manifest(tmp_path / executor)["loaded_models"][model]
        assert loaded["batch_size"] == "auto"
        chosen[executor] = loaded["batch_sizes"]
    ran = shared_backend(model, options).batch_sizes
    assert ran, "the serial run's backend chose no batch size"
    assert chosen["serial"] == chosen["process"] == ran
    for size in ran.values():
        assert size["rows"] == hf_memory.HOST_ROWS
        assert size["how"].startswith("cpu: device memory not measured")
