"""Readers and checks behind `annotator.datasets.services.imports.dataset_import`."""
