"""HITs at work: leases (assignments), answers, the room a HIT has left, the qualification test."""
