"""TGS-Bench (paper §4.2, App. B.1): its good/bad trajectory pairs, the bench file, and building
it as a protocol of its own (specs, unit, results, protocol)."""
