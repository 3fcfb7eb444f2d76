"""What ``clearsight verify`` and ``clearsight compare`` take: their options as configuration
models, from which the command line is generated (:mod:`clearsight.cli.generate`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from clearsight.verify.specs import DEFAULT_TOLERANCE

__all__ = ["CompareOptions", "VerifyOptions"]

_TOLERANCE = (
    "|Δ| of a probability, a confidence or a JSD (bits) beyond which two answers to an item "
    "differ (a changed answer always does)."
)


class VerifyOptions(BaseModel):
    """What ``clearsight verify RUN`` asks again, and how."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="Verify options")

    sample: int = Field(50, ge=1, description="Finished items to ask again (stratified).")
    seed: int = Field(0, description="Seed of the sample and of the shuffled order of its re-asks.")
    against: str | None = Field(
        None,
        description="Ask this model spec (the same weights through another backend or options) "
        "instead of each item's own.",
    )
    batch_size: int = Field(
        5, ge=1, description="Items per call to the model (and per forward pass of an hf: model)."
    )
    tolerance: float = Field(DEFAULT_TOLERANCE, ge=0, allow_inf_nan=False, description=_TOLERANCE)
    readouts: bool = Field(
        False,
        description="Ask no model: derive every record's read-outs again from its stored raw "
        "output and list the records whose stored read-outs differ.",
    )


class CompareOptions(BaseModel):
    """How ``clearsight compare RUN_A RUN_B`` compares two runs of one design."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="Compare options")

    out: Path = Field(Path("compare"), description="Directory of compare.html and compare.csv.")
    tolerance: float = Field(DEFAULT_TOLERANCE, ge=0, allow_inf_nan=False, description=_TOLERANCE)
    n_boot: int = Field(2000, ge=1, description="Replicates of the paired bootstrap.")
    seed: int = Field(0, description="Seed of the paired bootstrap.")
