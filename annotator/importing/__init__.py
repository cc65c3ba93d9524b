"""Readers and checks behind `annotator.services.importing.imports.dataset_import`."""
