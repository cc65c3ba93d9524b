import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0017_qualification_share"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="posterior_inflation",
            field=models.FloatField(default=1.0, validators=[django.core.validators.MinValueValidator(1.0)]),
        ),
        migrations.AddConstraint(
            model_name="campaign",
            constraint=models.CheckConstraint(
                condition=models.Q(("posterior_inflation__gte", 1)), name="campaign_posterior_inflation_min"
            ),
        ),
    ]
