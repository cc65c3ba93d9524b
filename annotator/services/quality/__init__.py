"""Quality control: gold scoring, peer checks, decisions on submitted work, worker trust."""
