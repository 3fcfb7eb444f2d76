"""The probe's numbers from its conversations: accuracy and cross-run calibration (the paper's
Tables 1, 9 and 11, Figures 2, 3 and 5) and the risk-coverage curves they gate."""
