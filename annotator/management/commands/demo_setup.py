from django.core.management.base import BaseCommand

from annotator.scenarios.demo import demo_setup


class Command(BaseCommand):
    help = "Prepare the demo: users, the demo dataset, machine annotators and a live campaign."

    def handle(self, *args, **options):
        demo_setup(out=self.stdout)
