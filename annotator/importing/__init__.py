"""Readers and checks behind `annotator.services.datasets.dataset_import`."""
