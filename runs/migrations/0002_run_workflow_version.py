"""Runs keep the number of the published version they pinned at start (docs/versions.md).

Runs started before this migration get the number of the version whose export they pinned:
the run's ``definitions_hash`` and the version's ``digest`` are both the SHA-256 of the same
canonical export. When several versions have the same export (a revert), the newest one
recorded at or before the run's start wins; a run matching none keeps None.
"""

from django.db import migrations, models


def versions_backfill(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    WorkflowVersion = apps.get_model("contextadmin", "WorkflowVersion")
    by_digest: dict[tuple[int, str], list[tuple[object, int]]] = {}
    versions = WorkflowVersion.objects.order_by("number").values_list(
        "workflow_id", "digest", "created", "number"
    )
    for workflow_id, digest, created, number in versions.iterator():
        by_digest.setdefault((workflow_id, digest), []).append((created, number))
    runs = Run.objects.filter(workflow_version__isnull=True, workflow__isnull=False)
    for pk, workflow_id, digest, started_at in runs.values_list(
        "pk", "workflow_id", "definitions_hash", "started_at"
    ).iterator():
        matches = by_digest.get((workflow_id, digest))
        if not matches:
            continue
        before = [number for created, number in matches if created <= started_at]
        number = before[-1] if before else matches[0][1]
        Run.objects.filter(pk=pk).update(workflow_version=number)


class Migration(migrations.Migration):
    dependencies = [
        ("contextadmin", "0003_versions"),
        ("runs", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="workflow_version",
            field=models.PositiveIntegerField(
                blank=True,
                help_text=(
                    "the published version number pinned at start (None: an unversioned workflow)"
                ),
                null=True,
            ),
        ),
        migrations.RunPython(versions_backfill, migrations.RunPython.noop, elidable=True),
    ]
