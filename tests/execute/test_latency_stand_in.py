"""The scripted backend's ``latency_s`` option: the executors' latency-bound stand-in model."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from clearsight.models import Message, Request, TextPart, load_backend
from clearsight.validate import InputError
from fixtures.latency import script


def test_latency_is_wall_time_without_cpu(tmp_path: Path) -> None:
    backend = load_backend(script(tmp_path), {"latency_s": 0.2})
    requests = [Request((Message("user", (TextPart(f"q{i}"),)),)) for i in range(3)]
    wall, cpu = time.perf_counter(), time.process_time()
    responses = backend.complete(requests)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert [r.texts for r in responses] == [("yes",)] * 3
    assert wall >= 0.2  # once per call (a batch), not per request
    assert wall < 0.6
    assert cpu < 0.05  # slept: the model's cost is elsewhere
    quick = load_backend(script(tmp_path), {})
    start = time.perf_counter()
    quick.complete(requests)
    assert time.perf_counter() - start < 0.1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"latency_s": -1}, "latency_s must be finite and >= 0"),
        ({"latency_s": float("inf")}, "latency_s must be finite and >= 0"),
        ({"latency_s": "1"}, "latency_s must be a number of seconds"),
        ({"latency_s": True}, "latency_s must be a number of seconds"),
        ({"latency": 1}, "unknown scripted option(s) latency; known: latency_s"),
    ],
)
def test_bad_latency_options_are_refused(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_backend(script(tmp_path), options)


def test_a_batch_size_given_to_every_backend_is_accepted(tmp_path: Path) -> None:
    """A run's default ``batch_size`` (grounding gives it every model) does not refuse a scripted
    stand-in; it answers a batch at once whatever the size."""
    backend = load_backend(script(tmp_path), {"batch_size": 16, "latency_s": 0})
    assert backend.latency_s == 0
