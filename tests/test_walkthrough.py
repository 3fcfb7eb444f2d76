"""scripts/walkthrough.py, the timed first hour (issue 49), in the pieces that run in seconds:
its dry run, its refusal of an unknown step, the reading of progress bars as the run's own bar
prints them, the option names of a help text, a command stopped with Ctrl-C at its time limit
in a pseudo-terminal, and a real step against this environment's ``clearsight``."""

from __future__ import annotations

import importlib.util
import io
import itertools
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "walkthrough.py"


def _script() -> ModuleType:
    """``scripts/walkthrough.py`` as a module."""
    spec = importlib.util.spec_from_file_location("walkthrough", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["walkthrough"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


WALK = _script()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_a_dry_run_names_every_step_in_order_and_runs_nothing() -> None:
    done = _run("--dry-run")
    assert done.returncode == 0, done.stderr
    names = [line.split(":", 1)[0] for line in done.stdout.splitlines()]
    assert names == ["uptime", *WALK._steps()]
    assert names[1:] == [
        "demo",
        "startup",
        "sweep_help",
        "plan_bare",
        "narrow",
        "grounding",
        "probe",
        "first_screen",
    ]
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert said["narrow"].startswith(
        "clearsight plan examples/sweep-coco-hf.yaml --wordings mcq.reason,mcq.generic"
    )
    assert "load_end" not in said  # nothing ran


def test_an_unknown_step_is_one_error_line_and_exit_code_2() -> None:
    done = _run("--only", "startup,demoo")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: unknown step 'demoo'; the steps: demo, startup, sweep_help, plan_bare, narrow, "
        "grounding, probe, first_screen"
    ]
    assert done.stdout == ""


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.integers(1, 250), min_size=1, max_size=12),
    cuts=st.lists(st.integers(0, 400), max_size=6),
    note=st.sampled_from(["", "turn 3 of 10, sensor: 5 of 5 samples"]),
)
def test_the_bar_reader_reads_what_the_runs_bar_prints(
    steps: list[int], cuts: list[int], note: str
) -> None:
    """Whatever the count (hundredths of items, as a probe conversation moves it) and however
    the output is cut into reads, the reader finds each drawing's count, total and
    description, the last one the bar's own count."""
    from clearsight.execute.bar import ItemBar

    out = io.StringIO()  # the run's bar (stage_bar's), every update drawn, into the string
    bar = ItemBar(total=30, desc="probe", unit="item", file=out, mininterval=0, miniters=1)
    for hundredths in steps:
        if bar.n + hundredths / 100 < 30:
            bar.update(hundredths / 100)
    bar.set_postfix_str(note)
    text = out.getvalue()
    bounds = sorted({0, *(c % (len(text) + 1) for c in cuts), len(text)})
    chunks = [(float(i), text[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    drawn = WALK.bar_lines(chunks)
    assert drawn, text
    assert {(b.desc, b.total) for b in drawn} == {("probe", 30)}
    assert abs(drawn[-1].n - bar.n) <= 0.005 + 1e-9  # printed to hundredths
    assert [b.n for b in drawn] == sorted(b.n for b in drawn)
    assert drawn[-1].text.endswith(f", {note}]" if note else "]")


def test_option_names_are_the_long_options_a_help_text_lists() -> None:
    text = (
        "  --imagenet-c-severities A,B  ImageNet-C severities (see --n).\n"
        "  -o, --out <path>  Run directory; not an option: x--y\n"
    )
    assert WALK.option_names(text) == ["--imagenet-c-severities", "--n", "--out"]


def test_a_watched_command_is_stopped_with_ctrl_c_at_its_limit() -> None:
    """In a terminal of its own, what it prints comes with the time it came; past the limit
    it gets Ctrl-C, which ends it (Python ends on an unhandled KeyboardInterrupt by SIGINT)."""
    code = "import sys, time\nprint('ready', sys.stdout.isatty(), flush=True)\ntime.sleep(60)\n"
    got = WALK.watch([sys.executable, "-c", code], limit_s=1.5)
    assert got.stopped
    assert got.rc == -signal.SIGINT
    assert 1.5 <= got.seconds < 30
    assert next(line for _, line in WALK.lines(got.chunks)) == "ready True"
    assert "KeyboardInterrupt" in got.text


def test_the_help_step_runs_against_this_environment() -> None:
    """``sweep_help`` against the ``clearsight`` beside this interpreter: ``name: value``
    lines, the sweep's options listed whole, the load before and after."""
    venv = Path(sys.executable).parent.parent
    done = _run("--only", "sweep_help", "--venv", str(venv))
    assert done.returncode == 0, done.stderr
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert said["sweep_help_rc"] == "0"
    assert int(said["sweep_help_options"]) > 20  # the run options at the group
    assert said["sweep_help_cut_names"] == "0"
    assert said["sweep_help_longest_option"].startswith("--")
    assert list(said)[:2] == ["uptime", "load_sweep_help"]
    assert list(said)[-1] == "load_end"


@pytest.mark.skipif(
    not Path("/usr/bin/chromium").exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium: run `make browser`",
)
def test_the_screenshot_is_the_pages_first_screen_at_1280x800(tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text('<body style="margin:0;height:3000px;background:#c00"></body>')
    shot = tmp_path / "shot" / "first-screen.png"
    done = _run("--shoot", str(page), str(shot))
    assert done.returncode == 0, done.stderr
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 800)  # the first screen only, not the 3000-px page
    assert image.getpixel((640, 400)) == (204, 0, 0)
