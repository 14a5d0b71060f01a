from django.contrib import admin
from django.urls import include, path

from contextadmin import views

urlpatterns = [
    path("healthz", views.health, name="health"),  # docs/deploy.md, Health checks
    path("admin/", admin.site.urls),
    path("nested_admin/", include("nested_admin.urls")),
    path(
        "schema/context_variables.schema.json",
        views.context_variables_schema,
        name="context-variables-schema",
    ),
    # runs: the runtime API, the workflow export and the inspector
    path("", include("runs.urls")),
]
handler500 = "runs.api.server_error"  # JSON for the API
# Static files (admin, inspector) are served by ASGIStaticFilesHandler in contextadmin/asgi.py.
