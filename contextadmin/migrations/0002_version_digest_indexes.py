"""Index a version's digests and store its production export's digest, so a run start finds
the version a runtime's definitions are (docs/api.md) with an indexed query instead of hashing
exports; existing versions get their production digest here."""

import hashlib

from django.db import migrations, models


def production_digests_fill(apps, schema_editor):
    WorkflowVersion = apps.get_model("contextadmin", "WorkflowVersion")
    stored = WorkflowVersion.objects.using(schema_editor.connection.alias)
    for version in stored.only("pk", "export_production").iterator(chunk_size=200):
        digest = hashlib.sha256(version.export_production.encode("utf-8")).hexdigest()
        stored.filter(pk=version.pk).update(digest_production=digest)


class Migration(migrations.Migration):
    dependencies = [("contextadmin", "0001_squashed_0004_output_mappings")]

    operations = [
        migrations.AddField(
            model_name="workflowversion",
            name="digest_production",
            field=models.CharField(
                db_index=True,
                default="",
                help_text="SHA-256 of the production export.",
                max_length=64,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(production_digests_fill, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="workflowversion",
            name="digest",
            field=models.CharField(
                db_index=True, help_text="SHA-256 of the export.", max_length=64
            ),
        ),
    ]
