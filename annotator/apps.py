from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Vericap"

    def ready(self):
        from annotator import signals  # noqa: F401  (connects the audit receivers)
        from annotator.scenarios import scene_facts  # noqa: F401  (registers the scene_facts proposal generator)
