"""What a run sends, apart from any tracker: keys every tracker takes, the manifest as
parameters, the ``--tracker`` option's parsing, and the toy fourth protocol's content."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight import driver
from clearsight.cli import app
from clearsight.cli.fields import NONE
from clearsight.faces import register
from clearsight.faces.face import Measured
from clearsight.report import build_report
from clearsight.store import run_manifest
from clearsight.track.content import MAX_PARAM_CHARS, content_of, metric_key, params_of
from clearsight.track.names import tracker_spec
from clearsight.track.session import TRACKERS, card_measured
from test_fourth_protocol import TOY, TOY_FACE, ToyConfig

runner = CliRunner()
#: What MLflow, the strictest of the three, accepts in a key.
ACCEPTED = re.compile(r"^[\w.\- /:]*$")


@given(st.lists(st.text(max_size=20), max_size=5))
def test_every_key_is_one_every_tracker_takes(parts: list[str]) -> None:
    key = metric_key(parts)
    assert ACCEPTED.match(key)
    assert len(key) >= sum(
        len(p) for p in parts
    )  # nothing dropped: each character kept or replaced


@given(st.lists(st.from_regex(r"[A-Za-z0-9_.\- :]{1,12}", fullmatch=True), max_size=5))
def test_an_accepted_key_is_kept_as_it_is(parts: list[str]) -> None:
    assert metric_key(parts) == "/".join(parts)


def test_a_card_key_reads_as_it_is_written() -> None:
    assert metric_key(["observer", "fog V*_acc"]) == "observer/fog V_star_acc"
    assert metric_key(["m", "fog W ≥ internal"]) == "m/fog W _ internal"


def test_the_manifest_is_one_parameter_per_leaf() -> None:
    manifest = {
        "protocol": "sweep",
        "config": {"levels_m": [250.0, 2.0], "seed": 3, "observer": {"slope": 0.5}},
        "empty": {},
        "long": "x" * (MAX_PARAM_CHARS + 10),
        "plan": {"fingerprint": "f", "complete": False},
    }
    params = params_of(manifest)
    assert params == {
        "protocol": "sweep",
        "config.levels_m": "[250.0, 2.0]",
        "config.seed": "3",
        "config.observer.slope": "0.5",
        "empty": "{}",
        "long": "x" * MAX_PARAM_CHARS,
    }
    assert json.loads(params["config.levels_m"]) == [250.0, 2.0]


#: What ``--tracker`` is given: tracker names, a colon and a project's characters or others.
SPECS = st.one_of(
    st.from_regex(r"[A-Za-z0-9_.:/ -]{0,16}", fullmatch=True),
    st.tuples(st.sampled_from([*TRACKERS, "mlflow2", ""]), st.text(max_size=10)).map(":".join),
)


def _well_formed(text: str) -> bool:
    """The rule docs/track.md states: a tracker's name, or ``trackio:`` and a project of
    letters, digits, ``_`` and ``-``."""
    name, colon, project = text.partition(":")
    if name not in TRACKERS:
        return False
    return not colon or (name == "trackio" and re.fullmatch(r"[A-Za-z0-9_-]+", project) is not None)


@given(SPECS)
@settings(max_examples=300)
def test_a_tracker_spec_is_accepted_exactly_when_well_formed(text: str) -> None:
    if not _well_formed(text):
        with pytest.raises(ValueError, match=r"is not one of|takes no ':PROJECT'|trackio project"):
            tracker_spec(text)
        return
    name, project = tracker_spec(text)
    assert f"{name}:{project}" == text if project is not None else name == text


def test_the_trackers_cannot_be_added_to_at_run_time() -> None:
    """The trackers' own process knows only the trackers its import of the module lists."""
    with pytest.raises(TypeError):
        TRACKERS["mine"] = "mypackage.sink:MySink"  # type: ignore[index]
    assert sorted(TRACKERS) == ["mlflow", "trackio", "wandb"]


def _refused_on_the_command_line(text: str) -> bool:
    """Whether ``--tracker text`` is refused: a list option's value is stripped, and an
    empty one or ``none`` asks for no tracker (cli/fields.py)."""
    value = text.strip()
    return value not in ("", NONE) and not _well_formed(value)


@given(SPECS.filter(_refused_on_the_command_line))
@settings(deadline=None, max_examples=30)  # a command line each: the generated command parses
def test_a_refused_tracker_is_one_error_line_and_nothing_runs(text: str) -> None:
    out = Path("never-written-by-this-test")
    result = runner.invoke(app, ["sweep", "--out", str(out), "--tracker", text])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: invalid execution options: tracker:")
    assert not out.exists()


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("mlflow:exp", "MLFLOW_EXPERIMENT_NAME"),
        ("wandb:proj", "WANDB_PROJECT"),
        ("trackio:my.model", "only letters, digits, '_' and '-'"),
        ("trackio:", "only letters, digits, '_' and '-'"),
        ("trackio:registry-x", "reserved for trackio registries"),  # trackio's own rules
        ("trackio:model_configs", "reserved suffix '_configs'"),
        ("neptune", "is not one of mlflow, trackio, wandb"),
    ],
)
def test_track_refuses_a_tracker_with_one_line_writing_nothing(
    spec: str, says: str, tmp_path: Path
) -> None:
    run_dir = tmp_path / "toy"
    driver.run(TOY, ToyConfig(), run_dir, driver.Execution(progress=False))
    before = sorted(p.name for p in run_dir.iterdir())
    result = runner.invoke(app, ["track", str(run_dir), "--to", spec])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: tracker {spec!r}: ")
    assert says in lines[0]
    assert sorted(p.name for p in run_dir.iterdir()) == before  # no report written


def test_the_toy_fourth_protocol_sends_its_card_numbers(tmp_path: Path) -> None:
    """A protocol registered outside the package: its report says nothing of what it
    measured, so its card's numbers are sent (5 of 6 right)."""
    run = tmp_path / "toy"
    driver.run(TOY, ToyConfig(), run, driver.Execution(progress=False))
    register("toy", TOY_FACE)
    heard: list[Measured] = []
    build_report(run, measured=heard.append)
    assert heard == []  # the toy's report does not say
    measured = card_measured(run)
    assert measured is not None
    content = content_of(run_manifest(run), measured, ())
    assert content.summary["toy accuracy"] == pytest.approx(5 / 6, abs=1e-12)
    assert content.summary["toy accuracy/n"] == 6
    low, high = content.summary["toy accuracy/low"], content.summary["toy accuracy/high"]
    assert low <= 5 / 6 <= high
    assert content.steps == ()
    assert content.params["protocol"] == "toy"
    assert json.loads(content.params["config.numbers"]) == [1, 2, 3, 4, 5, 6]


def test_a_grounding_report_says_the_tgs_it_measured(tmp_path: Path) -> None:
    """Grounding's report tells the trackers its run's TGS from its own analysis (the run's
    configuration: 200 draws): TGS-self averages the benchmarks' means, (0.4 + 0) / 2."""
    from clearsight.grounding import analyse_grounding
    from clearsight.grounding.face import grounding_numbers
    from fixtures.grounding_runs import calibration_run

    run = calibration_run(tmp_path / "run")
    heard: list[Measured] = []
    build_report(run, measured=heard.append)
    (measured,) = heard
    assert measured.points == ()
    again = grounding_numbers(analyse_grounding(run, n_boot=200, seed=0))
    got = measured.numbers[""]
    assert [n.key for n in got] == [n.key for n in again]
    assert got[0].key == "TGS-self"
    assert got[0].estimate == pytest.approx(0.2, abs=1e-12)
    for a, b in zip(got, again, strict=True):
        want = (b.estimate, b.low, b.high, b.n)
        assert (a.estimate, a.low, a.high, a.n) == pytest.approx(want, nan_ok=True)
    summary = content_of({}, measured, ()).summary
    assert summary["TGS-self"] == pytest.approx(0.2, abs=1e-12)
    assert summary["TGS-self/low"] <= 0.2 <= summary["TGS-self/high"]
