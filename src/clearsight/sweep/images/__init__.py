"""What a model is shown, looked at and placed on the metre axis: the first preview of a scene,
the report's example images rendered again from their items, and the nominal corruptions'
equivalent visibilities."""
