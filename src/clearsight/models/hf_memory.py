"""``batch_size: auto`` for the ``hf`` backend: the largest batch that fits the device's memory.

Found once per model and image size (the pixels a prompt carries set most of its activations),
and recorded in the backend's ``info`` under ``batch_sizes``; the driver writes them into the
run's manifest (``loaded_models``) after the unit whose first batch chose them, from a pool's
workers and Ray's replicas too (:func:`clearsight.models.registry.batch_sizes_found`):

* **CUDA** — one probe batch of up to :data:`PROBE_ROWS` of the call's own requests is run
  with the allocator's peak reset; its peak above the memory held before, per row, is what a row
  costs, and the batch is ``floor(HEADROOM * free memory / per-row peak)`` rows (the weights
  are already resident, so free memory is what batches may take), at least 1, at most
  :data:`MAX_ROWS`. The probe's results are kept: nothing is computed twice.
* **CPU and MPS** — there is no device memory to measure (a CPU's batches share host memory
  with everything else, and a CPU gains little from rows beyond a few), so ``auto`` is
  :data:`HOST_ROWS`, recorded with that reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from clearsight.models.hf_work import ChunkRunner, WorkItem, WorkOut

#: Rows of the probe batch on CUDA.
PROBE_ROWS = 4
#: Share of the free device memory batches may take (the rest: fragmentation, decode growth).
HEADROOM = 0.8
#: The largest batch ``auto`` picks.
MAX_ROWS = 256
#: ``auto`` on a device whose memory is not measured (CPU, MPS).
HOST_ROWS = 8


def fit_rows(per_row: float, free: float) -> int:
    """Rows that fit in ``HEADROOM * free`` bytes at ``per_row`` bytes each, in
    ``[1, MAX_ROWS]``."""
    if per_row <= 0:
        return MAX_ROWS
    return max(1, min(MAX_ROWS, int(HEADROOM * free // per_row)))


def image_size_key(item: WorkItem) -> str:
    """The image sizes of a request as a key (``"451x300"``; ``"text"`` without images)."""
    return ",".join(f"{w}x{h}" for w, h in (im.size for im in item.images)) or "text"


def auto_rows(backend: ChunkRunner, todo: list[WorkItem]) -> tuple[int, dict[int, WorkOut]]:
    """The batch size for ``todo`` (the first request's image size decides, found once per
    size and recorded in ``backend.batch_sizes``) and any results the probe computed, by
    index into ``todo``."""
    if not todo:
        return HOST_ROWS, {}
    key = image_size_key(todo[0])
    if key in backend.batch_sizes:
        return int(backend.batch_sizes[key]["rows"]), {}
    if backend.device.type != "cuda":
        backend.batch_sizes[key] = {
            "rows": HOST_ROWS,
            "how": f"{backend.device.type}: device memory not measured; {HOST_ROWS} rows",
        }
        return HOST_ROWS, {}
    probe = todo[:PROBE_ROWS]
    torch.cuda.synchronize(backend.device)
    held = torch.cuda.memory_allocated(backend.device)
    torch.cuda.reset_peak_memory_stats(backend.device)
    outs = backend._chunk(probe)
    peak = torch.cuda.max_memory_allocated(backend.device) - held
    free, _ = torch.cuda.mem_get_info(backend.device)
    rows = fit_rows(peak / len(probe), float(free))
    backend.batch_sizes[key] = {
        "rows": rows,
        "how": f"cuda: probe of {len(probe)} rows peaked at {peak / 2**20:.0f} MiB; "
        f"{free / 2**20:.0f} MiB free",
    }
    return rows, dict(enumerate(outs))
