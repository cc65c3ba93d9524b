"""The truth a gold item's role states (the posterior and the judge's calibration read it)."""

from annotator.campaigns.models.campaign import ItemRole

GOLD_TRUTH = {ItemRole.GOLD_POSITIVE: True, ItemRole.GOLD_NEGATIVE: False}
