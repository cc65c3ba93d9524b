"""Labels: aggregation of approved answers into Labels, caption clean-up (ECCV Caption App. C)."""
