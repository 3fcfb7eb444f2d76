"""The visibility sweep: physical fog and water on a metric depth map."""
