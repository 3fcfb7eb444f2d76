"""Physics of visibility: sRGB codec, Koschmieder fog, underwater absorption, ImageNet-C fog,
equivalent visibility, and the blank/shuffled controls with the red target box."""

from clearsight.physics.controls import (
    BLANK_GREY,
    BOX_COLOUR,
    BOX_THICKNESS_PX,
    blank_like,
    derangement,
    draw_box,
)
from clearsight.physics.equivalence import (
    Equivalence,
    equivalent_visibility,
    imagenet_c_equivalents,
    retained_gain,
)
from clearsight.physics.imagenet_c import FOG_SEVERITY_PARAMS, imagenet_c_fog, plasma_fractal
from clearsight.physics.medium import (
    DEFAULT_AIRLIGHT,
    DEFAULT_WAVELENGTHS_NM,
    DEPTH_CLIP_M,
    SWEEP_LEVELS_M,
    VISIBILITY_CONSTANT,
    extinction,
    fog,
    fog_levels,
    fog_linear,
    underwater,
    underwater_levels,
    water_coefficients,
)
from clearsight.physics.srgb import (
    decode_srgb8,
    encode_srgb8,
    linear_to_srgb,
    quantize8,
    srgb_to_linear,
)
from clearsight.physics.water_tables import WATER_TABLES, absorption

__all__ = [
    "BLANK_GREY",
    "BOX_COLOUR",
    "BOX_THICKNESS_PX",
    "DEFAULT_AIRLIGHT",
    "DEFAULT_WAVELENGTHS_NM",
    "DEPTH_CLIP_M",
    "FOG_SEVERITY_PARAMS",
    "SWEEP_LEVELS_M",
    "VISIBILITY_CONSTANT",
    "WATER_TABLES",
    "Equivalence",
    "absorption",
    "blank_like",
    "decode_srgb8",
    "derangement",
    "draw_box",
    "encode_srgb8",
    "equivalent_visibility",
    "extinction",
    "fog",
    "fog_levels",
    "fog_linear",
    "imagenet_c_equivalents",
    "imagenet_c_fog",
    "linear_to_srgb",
    "plasma_fractal",
    "quantize8",
    "retained_gain",
    "srgb_to_linear",
    "underwater",
    "underwater_levels",
    "water_coefficients",
]
