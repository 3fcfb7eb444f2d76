"""The first hour of a newcomer, timed (issue 49's walk-through): run once on a fresh clone, on
a quiet machine, and quote its ``name: value`` lines.

Steps, in order (each preceded by the machine's load, ``load_<step>``):

* ``demo``: ``make venv data models embedded`` (what ``make demo`` prepares before its timer),
  then ``make demo``: the seconds to its first report (the first ``report:`` line it prints)
  and to its end;
* ``startup``: ``clearsight --help``, ten times: median, fastest and slowest wall time;
* ``sweep_help``: ``clearsight sweep --help`` at 80 columns: its lines, its longest option
  name, and whether any name is cut ("…");
* ``plan_bare``: ``clearsight plan examples/sweep-coco-hf.yaml`` with empty caches (no depth
  weights, no COCO file, the hub offline): exit code, seconds, and its notes;
* ``narrow``: the same plan narrowed to two letter wordings from the command line
  (``--wordings mcq.reason,mcq.generic``): exit code, seconds, notes and the total row;
* ``grounding`` and ``probe``: the first commands of docs/grounding.md and docs/probe.md, each
  stopped with Ctrl-C after :data:`WATCH_S` seconds, in a terminal (a pseudo-terminal, so they
  print what a person sees): when they first printed, when their progress bar first showed and
  first moved, and the bar's last line;
* ``first_screen``: the demo report's first screen at 1280x800 in headless Chromium
  (``/usr/bin/chromium``, ``make browser``; playwright from ``.venv``), saved as a PNG.

Logs and the screenshot go to ``runs/walkthrough/``. Only the standard library is used, so the
script runs before ``.venv`` exists (``python3 scripts/walkthrough.py``); the screenshot runs
this script again with ``.venv``'s Python (``--shoot``; ``--venv`` names another environment)::

    python3 scripts/walkthrough.py                     # every step (about 15 minutes idle)
    python3 scripts/walkthrough.py --dry-run           # the commands, nothing run
    python3 scripts/walkthrough.py --only startup,sweep_help
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The environment whose ``clearsight`` and ``python`` run the steps (``--venv``).
VENV = ROOT / ".venv"
LOGS = ROOT / "runs" / "walkthrough"
#: How long the grounding and probe commands run before Ctrl-C.
WATCH_S = 90.0
#: The first commands of docs/grounding.md and docs/probe.md (README points to them).
GROUNDING = ("grounding", "--out", "runs/walk-grounding", "--n", "200")
PROBE = (
    *("probe", "run", "--out", "runs/walk-probe", "--runs", "5", "--k", "5", "--budget", "100"),
    *("--strategies", "direct,react,uot,bp", "--reasoner", "hf:smollm2-135m"),
    *("--sensor", "perceiver"),
)
DESIGN = "examples/sweep-coco-hf.yaml"
NARROW = ("--wordings", "mcq.reason,mcq.generic")
STARTUP_RUNS = 10


def say(name: str, value: object) -> None:
    """One ``name: value`` line, at once."""
    print(f"{name}: {value}", flush=True)


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes), as ``uptime`` prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ------------------------------------------------------------------------------------------
# Reading what a command printed


#: A tqdm bar's line: ``desc:  12%|█▏   | 0.25/20 [00:05<...`` (the description optional).
_BAR = re.compile(
    r"(?:(?P<desc>[^\r\n|]*?):\s*)?\d+%\|[^|]*\|\s*(?P<n>\d+(?:\.\d+)?)/(?P<total>\d+)"
)


@dataclass(frozen=True)
class BarLine:
    """One drawing of a progress bar: when (seconds since the command started), its
    description, count and total, and the line as printed."""

    t: float
    desc: str
    n: float
    total: int
    text: str


#: A terminal's colour and cursor sequences (Rich colours its notes at a terminal).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def lines(chunks: Iterable[tuple[float, str]]) -> Iterator[tuple[float, str]]:
    """The lines of a terminal's output (ended by a newline or a carriage return, as a bar
    redraws itself), each with the time its end arrived, without colour codes; ``chunks``:
    what was read, when."""
    pending = ""
    for t, chunk in chunks:
        pending += _ANSI.sub("", chunk)
        *done, pending = re.split(r"\r\n|\r|\n", pending)
        for line in done:
            yield t, line
    if pending:
        yield t, pending


def bar_lines(chunks: Iterable[tuple[float, str]]) -> list[BarLine]:
    """Every drawing of a progress bar in a command's output."""
    found = []
    for t, line in lines(chunks):
        match = _BAR.search(line)
        if match:
            desc = (match["desc"] or "").strip()
            found.append(BarLine(t, desc, float(match["n"]), int(match["total"]), line.strip()))
    return found


def option_names(help_text: str) -> list[str]:
    """The long option names a help text lists (``--imagenet-c-severities``)."""
    return sorted(set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", help_text)))


# ------------------------------------------------------------------------------------------
# Running commands


@dataclass
class Watched:
    """What a command printed (``chunks``: seconds since its start, text), its exit code and
    how long it ran; ``stopped``: whether it was stopped at its time limit."""

    chunks: list[tuple[float, str]] = field(default_factory=list)
    rc: int | None = None
    seconds: float = 0.0
    stopped: bool = False

    @property
    def text(self) -> str:
        """Everything it printed."""
        return "".join(c for _, c in self.chunks)


def _ctrl_c_ends() -> None:
    """In the child before it starts: Ctrl-C does what it does in a terminal, even where this
    script was started with SIGINT ignored (a shell's background job), which the child would
    inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def watch(
    argv: Sequence[str], limit_s: float | None = None, env: dict[str, str] | None = None
) -> Watched:
    """Run ``argv`` in the repository root in a pseudo-terminal of 120 columns (it prints as to
    a person: progress bars, status lines) and read its output as it comes; past ``limit_s``
    it gets Ctrl-C (SIGINT to its process group), then SIGTERM 30 s later, then SIGKILL."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    began = time.monotonic()
    environ = {**os.environ, **(env or {})}
    proc = subprocess.Popen(
        list(argv),
        cwd=ROOT,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environ,
        start_new_session=True,
        preexec_fn=_ctrl_c_ends,
    )
    os.close(slave)
    got = Watched()
    signals = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
    deadline = None if limit_s is None else began + limit_s
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready and proc.poll() is not None:
            break  # it ended and said everything (a process it left may hold the terminal)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the command closed its terminal
                data = b""
            if not data:
                break
            got.chunks.append((time.monotonic() - began, data.decode("utf-8", "replace")))
        if deadline is not None and time.monotonic() > deadline and proc.poll() is None:
            got.stopped = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signals.pop(0) if len(signals) > 1 else signals[0])
            deadline = time.monotonic() + 30
    os.close(master)
    got.rc = proc.wait()
    got.seconds = time.monotonic() - began
    return got


def keep_log(name: str, watched: Watched) -> None:
    """Write what the step's command printed to ``runs/walkthrough/<name>.log``."""
    LOGS.mkdir(parents=True, exist_ok=True)
    (LOGS / f"{name}.log").write_text(watched.text, encoding="utf-8")


def clearsight(*args: str) -> list[str]:
    """The command line of ``clearsight`` from :data:`VENV`."""
    return [str(VENV / "bin" / "clearsight"), *args]


# ------------------------------------------------------------------------------------------
# The steps


def step_demo() -> None:
    """``make demo``, its preparation timed apart: first report and end."""
    prepared = watch(["make", "venv", "data", "models", "embedded"])
    keep_log("demo-prepare", prepared)
    say("demo_prepare_s", f"{prepared.seconds:.1f}")
    say("demo_prepare_rc", prepared.rc)
    demo = watch(["make", "demo"])
    keep_log("demo", demo)
    first = next((t for t, line in lines(demo.chunks) if line.startswith("report: ")), None)
    say("demo_first_report_s", "none" if first is None else f"{first:.1f}")
    say("demo_total_s", f"{demo.seconds:.1f}")
    say("demo_rc", demo.rc)


def step_startup() -> None:
    """``clearsight --help``'s wall time, :data:`STARTUP_RUNS` runs."""
    walls = []
    for _ in range(STARTUP_RUNS):
        began = time.perf_counter()
        subprocess.run(clearsight("--help"), cwd=ROOT, capture_output=True, check=True)
        walls.append(time.perf_counter() - began)
    say("startup_help_median_s", f"{statistics.median(walls):.2f}")
    say("startup_help_min_max_s", f"{min(walls):.2f} {max(walls):.2f}")


def step_sweep_help() -> None:
    """``clearsight sweep --help`` at 80 columns: lines, the longest option name, cut names."""
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    out = subprocess.run(
        clearsight("sweep", "--help"), cwd=ROOT, env=env, capture_output=True, text=True
    )
    names = option_names(out.stdout)
    say("sweep_help_rc", out.returncode)
    say("sweep_help_lines", len(out.stdout.splitlines()))
    say("sweep_help_options", len(names))
    say("sweep_help_longest_option", max(names, key=len) if names else "none")
    say("sweep_help_cut_names", out.stdout.count("…"))


def bare_env(tmp: str) -> dict[str, str]:
    """Caches that hold nothing and a hub that cannot be reached: no weights, no COCO file."""
    return {
        "HF_HOME": f"{tmp}/hf",
        "HF_HUB_OFFLINE": "1",
        "CLEARSIGHT_CACHE": f"{tmp}/cache",
    }


def step_plan(name: str, extra: Sequence[str]) -> None:
    """``clearsight plan`` of the published design with empty caches (``extra``: flags)."""
    with tempfile.TemporaryDirectory() as tmp:
        planned = watch(clearsight("plan", DESIGN, *extra), env=bare_env(tmp))
    keep_log(name, planned)
    said = [line for _, line in lines(planned.chunks) if line.strip()]
    say(f"{name}_rc", planned.rc)
    say(f"{name}_s", f"{planned.seconds:.1f}")
    for line in said:
        if line.startswith(("note:", "error:", "warning:", "total")):
            say(f"{name}_said", " ".join(line.split()))


def step_watched(name: str, args: Sequence[str]) -> None:
    """A run command for :data:`WATCH_S` seconds: when it first printed, when its bar first
    showed and first moved, its last bar line."""
    watched = watch(clearsight(*args), limit_s=WATCH_S)
    keep_log(name, watched)
    bars = bar_lines(watched.chunks)
    moved = next((b for b in bars if b.n > 0), None)
    first = watched.chunks[0][0] if watched.chunks else None
    say(f"{name}_first_output_s", "none" if first is None else f"{first:.1f}")
    say(f"{name}_bar_shown_s", f"{bars[0].t:.1f}" if bars else "none")
    say(f"{name}_bar_moved_s", f"{moved.t:.1f}" if moved else "none")
    say(f"{name}_last_bar", bars[-1].text if bars else "none")
    say(f"{name}_stopped_after_s", f"{watched.seconds:.1f}" if watched.stopped else "no")
    say(f"{name}_rc", watched.rc)


def step_first_screen() -> None:
    """The demo report's first screen, shot by this script under ``.venv``'s Python."""
    shot = LOGS / "first-screen.png"
    report = ROOT / "runs" / "demo" / "report.html"
    argv = [str(VENV / "bin" / "python"), __file__, "--shoot", str(report), str(shot)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    say("first_screen_rc", done.returncode)
    say("first_screen_png", shot if done.returncode == 0 else done.stderr.strip()[-300:])


def shoot(report: Path, out: Path) -> None:
    """``report``'s first screen at 1280x800 in headless Chromium, as a PNG in ``out`` (the
    viewport and browser of scripts/view_screenshot.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from playwright.sync_api import sync_playwright
    from view_screenshot import CHROMIUM, VIEWPORT

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(report.resolve().as_uri())
            page.wait_for_load_state("networkidle")
            png = bytes(page.screenshot(full_page=False))
        finally:
            browser.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(png)


def _steps() -> dict[str, tuple[str, Callable[[], None]]]:
    """Every step by name: what it runs (for ``--dry-run``) and how."""
    bare = "(empty caches, hub offline)"
    stop = f"(Ctrl-C after {WATCH_S:g} s)"
    return {
        "demo": ("make venv data models embedded; make demo", step_demo),
        "startup": (f"clearsight --help  (x{STARTUP_RUNS})", step_startup),
        "sweep_help": ("COLUMNS=80 clearsight sweep --help", step_sweep_help),
        "plan_bare": (f"clearsight plan {DESIGN}  {bare}", lambda: step_plan("plan_bare", ())),
        "narrow": (
            f"clearsight plan {DESIGN} {' '.join(NARROW)}  {bare}",
            lambda: step_plan("narrow", NARROW),
        ),
        "grounding": (
            f"clearsight {' '.join(GROUNDING)}  {stop}",
            lambda: step_watched("grounding", GROUNDING),
        ),
        "probe": (f"clearsight {' '.join(PROBE)}  {stop}", lambda: step_watched("probe", PROBE)),
        "first_screen": (
            "runs/demo/report.html at 1280x800 in headless Chromium",
            step_first_screen,
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options; run (or, ``--dry-run``, print) the chosen steps in order."""
    global VENV
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument("--only", default="", help="comma-separated steps (default: all)")
    parser.add_argument("--venv", type=Path, default=VENV, help="environment (default: .venv)")
    parser.add_argument(
        "--shoot", nargs=2, type=Path, metavar=("REPORT", "PNG"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    VENV = args.venv
    if args.shoot:
        shoot(*args.shoot)
        return 0
    steps = _steps()
    chosen = [s.strip() for s in args.only.split(",") if s.strip()] or list(steps)
    unknown = [s for s in chosen if s not in steps]
    if unknown:
        known = ", ".join(steps)
        print(f"error: unknown step {unknown[0]!r}; the steps: {known}", file=sys.stderr)
        return 2
    say("uptime", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    for name in chosen:
        what, run = steps[name]
        if args.dry_run:
            say(name, what)
            continue
        say(f"load_{name}", load())
        run()
    if not args.dry_run:
        say("load_end", load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
