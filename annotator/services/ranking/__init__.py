"""Machine annotators and their ranking runs (the work itself is workers/ranking/)."""
