"""Problems with gold answers: the problem record, the bundled generator, the paper's benchmarks
from a hub snapshot, and a problem's image."""
