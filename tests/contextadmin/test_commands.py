"""Management commands: export_context, import_context, export_schema, demo_setup."""

from __future__ import annotations

import copy
import io
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from contextadmin_sdk.engine import format as fmt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from contextadmin import selectors
from contextadmin.demo import GENERATOR_CHAT
from contextadmin.models import Workflow
from devservers.mongo import demo_documents
from tests.contextadmin.conftest import db_dump

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# -- export_context ---------------------------------------------------------------------------
def test_export_writes_the_same_bytes_as_the_http_export(
    generator: Workflow, staff_client: Client, tmp_path: Path
) -> None:
    http = staff_client.get("/api/workflows/Generator/context_variables.json").content
    out, _ = run("export_context", "Generator")
    assert out.encode("utf-8") == http
    target = tmp_path / "cv.json"
    run("export_context", "Generator", "-o", str(target))
    assert target.read_bytes() == http


def test_export_production(generator: Workflow, tmp_path: Path) -> None:
    target = tmp_path / "prod.json"
    run("export_context", "Generator", "--environment", "production", "-o", str(target))
    rows = selectors.workflow_export(workflow=generator, environment="production")
    body = target.read_bytes()
    # The production definitions, and the version key: its number and their digest.
    version = json.loads(body)["version"]
    assert version == {
        "number": selectors.workflow_head_number(workflow=generator),
        "digest": fmt.export_digest(rows),
    }
    assert body == fmt.export_with_version(rows, number=version["number"])


def test_export_unknown_workflow(db: None) -> None:
    with pytest.raises(CommandError, match="no workflow named 'Nope'"):
        run("export_context", "Nope")


def test_export_schema(tmp_path: Path) -> None:
    target = tmp_path / "schema.json"
    run("export_schema", "-o", str(target))
    assert target.read_bytes() == selectors.schema_export_bytes()


# -- import_context ---------------------------------------------------------------------------
def test_import_creates_and_prints_the_diff(example_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "cv.json"
    path.write_bytes(example_bytes)
    out, err = run("import_context", str(path), "--workflow", "Generator")
    assert "+ derived variable interview_complete: boolean, 1 trigger" in out
    assert out.rstrip().endswith(
        "created workflow Generator: 7 added, 0 removed, 0 changed\nversion 1, published"
    )
    assert err == ""
    assert json.loads(
        selectors.workflow_export(workflow=Workflow.objects.get(name="Generator"))
    ) == (json.loads(example_bytes))


def test_import_prints_warnings(example: dict, tmp_path: Path) -> None:
    example["variables"] = []
    path = tmp_path / "cv.json"
    path.write_text(json.dumps(example))
    _, err = run("import_context", str(path), "--workflow", "Legacy")
    assert "warning: variables: legacy key ignored" in err


def test_import_without_replace_refuses_and_says_how(
    generator: Workflow, tmp_path: Path, example: dict
) -> None:
    changed = copy.deepcopy(example)
    changed["context_variables"]["declarative_variables"][1]["value"] = 50
    path = tmp_path / "cv.json"
    path.write_text(json.dumps(changed))
    with pytest.raises(CommandError, match="--replace"):
        run("import_context", str(path), "--workflow", "Generator")


def test_re_running_an_import_of_the_same_file_says_it_is_unchanged(
    generator: Workflow, tmp_path: Path, example_bytes: bytes
) -> None:
    """A pipeline's import step, run again on an unchanged file, succeeds (exit 0)."""
    path = tmp_path / "cv.json"
    path.write_bytes(example_bytes)
    run("import_context", str(path), "--workflow", "Generator", "--replace")
    before = db_dump()
    out, _ = run("import_context", str(path), "--workflow", "Generator")
    assert "already has these definitions (version 1); no new version" in out
    assert db_dump() == before


def test_import_replace_and_dry_run(generator: Workflow, example: dict, tmp_path: Path) -> None:
    changed = copy.deepcopy(example)
    changed["context_variables"]["declarative_variables"][1]["value"] = 50
    path = tmp_path / "cv.json"
    path.write_text(json.dumps(changed))
    before = db_dump()
    out, _ = run("import_context", str(path), "--workflow", "Generator", "--replace", "--dry-run")
    assert "~ declarative variable max_items: value 25 → 50" in out
    assert "would replace workflow Generator: 0 added, 0 removed, 1 changed" in out
    assert db_dump() == before
    out, _ = run("import_context", str(path), "--workflow", "Generator", "--replace")
    assert "replaced workflow Generator" in out
    assert b'"value": 50' in selectors.workflow_export(workflow=generator)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(b"{nope", "error: not valid JSON", id="invalid-json"),
        pytest.param(
            b'{"context_variables": {"declarative_variables": [{"name": "\xff"}]}}',
            "error: not valid JSON",
            id="not-utf-8",
        ),
        pytest.param(b"", "error: not valid JSON", id="empty"),
        pytest.param(b"[]", "error: the document must be a JSON object", id="not-an-object"),
        pytest.param(
            json.dumps(
                {
                    "context_variables": {
                        "derived_variables": [
                            {
                                "name": "x",
                                "triggers": [{"type": "agent_text", "match": {"equals": "go"}}],
                            }
                        ]
                    }
                }
            ).encode(),
            "error: context_variables.derived_variables[0].triggers[0].agent (x): field required",
            id="json-path",
        ),
    ],
)
def test_bad_files_are_rejected_without_traceback(
    generator: Workflow, tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "cv.json"
    path.write_bytes(content)
    before = db_dump()
    err = io.StringIO()
    with pytest.raises(CommandError, match=r"rejected .*nothing changed"):
        call_command(
            "import_context", str(path), "--workflow", "Generator", "--replace", stderr=err
        )
    assert expected in err.getvalue()
    assert db_dump() == before


def test_missing_file(db: None) -> None:
    with pytest.raises(CommandError, match=r"cannot read /nonexistent/cv\.json: No such file"):
        run("import_context", "/nonexistent/cv.json", "--workflow", "X")


def test_bad_workflow_name(tmp_path: Path, example_bytes: bytes) -> None:
    path = tmp_path / "cv.json"
    path.write_bytes(example_bytes)
    with pytest.raises(CommandError, match="workflow name"):
        run("import_context", str(path), "--workflow", "no spaces")


def test_rejection_exits_non_zero_in_a_real_process(tmp_path: Path) -> None:
    """The exit code and the absence of a traceback, as a deployment script sees them."""
    path = tmp_path / "bad.json"
    path.write_bytes(b"\xff\xfe not json")
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "PATH": "/usr/bin:/bin"}
    manage = str(Path(settings.BASE_DIR) / "manage.py")
    subprocess.run([sys.executable, manage, "migrate", "-v0"], env=env, check=True)
    proc = subprocess.run(
        [sys.executable, manage, "import_context", str(path), "--workflow", "X"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "error: not valid JSON" in proc.stderr and "CommandError: rejected" in proc.stderr
    assert "Traceback" not in proc.stderr
    missing = subprocess.run(
        [sys.executable, manage, "import_context", str(tmp_path / "none.json"), "--workflow", "X"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1 and "Traceback" not in missing.stderr


# -- demo_setup -------------------------------------------------------------------------------
def test_demo_setup_imports_the_demo_workflows_and_creates_the_env_superuser(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.MONGODB_URI = ""
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "boss")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "long-enough-pw")
    out, _ = run("demo_setup")
    assert "imported workflow Generator (" in out and "imported workflow GeneratorChat (" in out
    assert "created superuser boss" in out and "MONGODB_URI unset" in out
    assert get_user_model().objects.get(username="boss").check_password("long-enough-pw")
    versions = {workflow.name: workflow.versions.count() for workflow in Workflow.objects.all()}
    out, _ = run("demo_setup")  # idempotent: scripts/run runs it on every start
    assert "the demo workflows exist; nothing imported" in out and "user boss exists" in out
    assert "imported workflow" not in out
    again = {workflow.name: workflow.versions.count() for workflow in Workflow.objects.all()}
    assert again == versions == {"Generator": 1, "GeneratorChat": 1}


def test_demo_setup_gives_a_newcomer_a_workflow_with_hand_offs_and_a_tool_trigger(
    settings: Any,
) -> None:
    """What the inspector's hand-off panels show on a newcomer's first run."""
    settings.MONGODB_URI = ""
    run("demo_setup")
    chat = Workflow.objects.get(name="GeneratorChat")
    assert [
        (handoff.source_agent, handoff.target_agent, handoff.condition)
        for handoff in chat.handoffs.order_by("position")
    ] == [
        ("InterviewAgent", "ContextVariablesAgent", "${interview_complete}"),
        ("ContextVariablesAgent", "HandoffsAgent", "${context_saved}"),
        ("HandoffsAgent", "InterviewAgent", "${monetization_enabled} and ${handoffs_reviewed}"),
    ]
    derived = chat.variables.filter(category="derived").order_by("position")
    triggers = {
        variable.name: [(t.type, t.agent, t.tool) for t in variable.triggers.all()]
        for variable in derived
    }
    assert triggers == {
        "interview_complete": [("agent_text", "InterviewAgent", "")],
        "context_saved": [("tool_response", "", "save_context_plan")],
        "handoffs_reviewed": [("agent_turn_count", "HandoffsAgent", "")],
    }
    exported = json.loads(run("export_context", "GeneratorChat")[0])
    assert exported.pop("version")["number"] == 1
    assert exported == json.loads(GENERATOR_CHAT.config_path.read_text())  # imported as shipped


def test_demo_setup_completes_a_demo_made_before_generator_chat(
    generator: Workflow, settings: Any
) -> None:
    """A database holding only Generator (scripts/run before GeneratorChat shipped) gets the
    missing demo workflow; Generator itself is left as it is."""
    settings.MONGODB_URI = ""
    out, _ = run("demo_setup")
    assert "imported workflow GeneratorChat" in out and "workflow Generator (" not in out
    assert set(Workflow.objects.values_list("name", flat=True)) == {"Generator", "GeneratorChat"}
    assert generator.versions.count() == 1


def test_demo_setup_leaves_a_database_with_workflows_of_its_own_alone(
    generator: Workflow, settings: Any
) -> None:
    settings.MONGODB_URI = ""
    Workflow.objects.create(name="Mine")
    out, _ = run("demo_setup")
    assert "your own workflows exist; demo workflows not imported" in out
    assert set(Workflow.objects.values_list("name", flat=True)) == {"Generator", "Mine"}


def test_demo_setup_leaves_an_edited_demo_workflow_as_it_is(settings: Any) -> None:
    settings.MONGODB_URI = ""
    run("demo_setup")
    Workflow.objects.get(name="GeneratorChat").handoffs.all().delete()
    run("demo_setup")
    assert not Workflow.objects.get(name="GeneratorChat").handoffs.exists()


def test_demo_setup_generates_admin_once(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    settings.MONGODB_URI = ""
    monkeypatch.delenv("DJANGO_SUPERUSER_USERNAME", raising=False)
    monkeypatch.delenv("DJANGO_SUPERUSER_PASSWORD", raising=False)
    out, _ = run("demo_setup")
    line = next(line for line in out.splitlines() if "created superuser admin" in line)
    password = line.split("with password ")[1].split(" ")[0]
    assert get_user_model().objects.get(username="admin").check_password(password)
    out, _ = run("demo_setup")
    assert "password" not in out and "a superuser exists" in out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_demo_setup_notes_an_unreachable_mongodb(settings: Any) -> None:
    settings.MONGODB_URI = f"mongodb://127.0.0.1:{_free_port()}/?directConnection=true"
    started = time.monotonic()
    out, _ = run("demo_setup")
    assert time.monotonic() - started < 10
    assert "note: MongoDB unreachable" in out and "imported workflow Generator" in out


@pytest.mark.mongo
def test_demo_setup_seeds_empty_collections(mongo_server: Any, settings: Any) -> None:
    collection = mongo_server.client["autogen_ai_agents"]["Concepts"]
    collection.drop()
    settings.MONGODB_URI = mongo_server.uri
    try:
        out, _ = run("demo_setup")
        assert "seeded MongoDB autogen_ai_agents.Concepts (2 documents)" in out
        found = collection.find_one({"enterprise_id": "acme"})
        assert found["ConceptOverview"].startswith("Acme builds")
        out, _ = run("demo_setup")
        assert "autogen_ai_agents.Concepts not empty; left as is" in out
        assert len(list(collection.find({}))) == 2
    finally:
        mongo_server.seed(demo_documents())  # the session server is shared: restore it


def test_a_command_starts_without_the_servers_twisted_or_the_mongodb_driver() -> None:
    """A pipeline runs manage.py commands many times: each paid ~0.5 s of CPU to import Twisted
    (the daphne app) and pymongo, which no command but a MongoDB one uses."""
    heavy = "{'twisted', 'pymongo', 'daphne'}"
    loaded = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         f"import sys; print(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy}))"],
        cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=60, check=True,
    )
    assert loaded.stdout.strip().splitlines()[-1] == "[]", loaded.stdout + loaded.stderr
