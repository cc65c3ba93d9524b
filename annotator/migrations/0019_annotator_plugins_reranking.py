import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotator", "0018_posterior_inflation")]

    operations = [
        migrations.AlterField(
            model_name="machineannotator",
            name="kind",
            field=models.CharField(max_length=32),
        ),
        migrations.AddField(
            model_name="rankingrun",
            name="reranks",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="reranked_by",
                to="annotator.rankingrun",
            ),
        ),
        migrations.AddField(
            model_name="rankingrun",
            name="judges",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judge_runs",
                to="annotator.campaign",
            ),
        ),
        migrations.AddConstraint(
            model_name="rankingrun",
            constraint=models.CheckConstraint(condition=~models.Q(reranks=models.F("id")), name="run_reranks_another"),
        ),
        migrations.AddConstraint(
            model_name="rankingrun",
            constraint=models.CheckConstraint(
                condition=models.Q(reranks__isnull=True) | models.Q(judges__isnull=True), name="run_reranks_or_judges"
            ),
        ),
    ]
