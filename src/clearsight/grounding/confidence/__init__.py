"""Reading a model's confidence: the 11-way numeral distribution, its elicitation, the
calibration methods (paper §5, Table 2) as plug-ins, and the read-outs side by side (Table 2)."""
