"""Signed webhooks: a requester's endpoints and the deliveries of events to them."""
