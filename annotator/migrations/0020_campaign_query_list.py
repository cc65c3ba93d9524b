from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0019_annotator_plugins_reranking"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="query_list",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
