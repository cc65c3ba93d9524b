"""Campaigns: options, lifecycle, the build (pooling, gold, packing, writing) and sharing."""
