"""What a model is shown, looked at and placed on the metre axis: the first preview of a scene
and the nominal corruptions' equivalent visibilities."""
