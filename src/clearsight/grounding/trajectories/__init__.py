"""Trajectories: the template and its spans, native segmentation, which template a model writes
in, and a model's own generations."""
