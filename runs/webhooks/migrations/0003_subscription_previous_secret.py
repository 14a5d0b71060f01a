"""A rotated secret's overlap: the old secret signs beside the new one until
``previous_secret_until``."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0002_subscription_url_one_rule")]

    operations = [
        migrations.AddField(
            "subscription",
            "previous_secret",
            models.CharField(blank=True, editable=False, max_length=100),
        ),
        migrations.AddField(
            "subscription",
            "previous_secret_until",
            models.DateTimeField(blank=True, editable=False, null=True),
        ),
    ]
