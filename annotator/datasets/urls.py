"""Datasets and their imports: the routes of this slice's pages."""

from annotator.datasets.views import datasets

urlpatterns = [
    *datasets.urlpatterns,
]
