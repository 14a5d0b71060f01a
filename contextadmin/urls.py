from django.contrib import admin
from django.urls import include, path

from contextadmin import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("nested_admin/", include("nested_admin.urls")),
    path(
        "api/workflows/<str:name>/context_variables.json",
        views.workflow_context_variables,
        name="workflow-context-variables",
    ),
    path(
        "schema/context_variables.schema.json",
        views.context_variables_schema,
        name="context-variables-schema",
    ),
    path("", include("runs.urls")),
]
# Static files (admin, inspector) are served by ASGIStaticFilesHandler in contextadmin/asgi.py.
