from importlib import import_module

from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Vericap"

    def ready(self):
        from annotator.core import signals  # noqa: F401  (connects the audit receivers)

        # Each pipeline step registers its kinds of background job with the shared lifecycle (core.jobs).
        for step in ("datasets", "ranking", "campaigns", "labels", "research", "finegrained"):
            import_module(f"annotator.{step}.jobs")
        # A shared campaign opens its dataset to a researcher: the campaigns step registers that rule with the
        # datasets step (annotator.datasets.selectors.access.datasets_shared_register).
        import_module("annotator.campaigns.selectors.access")
        from annotator.scenarios import scene_facts  # noqa: F401  (registers the scene_facts proposal generator)
