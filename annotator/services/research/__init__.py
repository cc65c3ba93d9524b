"""Research on verified labels: evaluating a model's rankings with ECCV Caption's metrics."""
