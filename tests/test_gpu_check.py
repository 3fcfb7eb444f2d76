"""``benchmarks/gpu_check.sh`` where no CUDA GPU is visible: one line, status 77 (skipped),
nothing built."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_gpu_check_without_a_gpu_says_so_in_one_line_and_skips(tmp_path: Path) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHON": sys.executable}
    env["TMPDIR"] = str(tmp_path)  # where a checkpoint would be built
    done = subprocess.run(
        [str(ROOT / "benchmarks" / "gpu_check.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 77
    assert done.stdout.splitlines() == [
        "gpu_check: no CUDA GPU here (torch.cuda.is_available() is False): nothing run"
    ]
    assert list(tmp_path.iterdir()) == []
