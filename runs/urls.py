from django.urls import path, re_path

from runs import api, views

urlpatterns = [
    path("api/runs/", api.run_start, name="api-run-start"),
    path(api.EVENTS_ROUTE, api.run_events, name="api-run-events"),
    path("api/runs/<str:run_id>/state/", api.run_state, name="api-run-state"),
    path(
        "api/workflows/<str:name>/context_variables.json",
        api.workflow_context_variables,
        name="workflow-context-variables",
    ),
    # the inspector (staff sessions); the front page is the operator's front door
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("runs/", views.run_list, name="runs-list"),
    path("runs/<str:run_id>/", views.run_detail, name="runs-detail"),
    path("api/runs/<str:run_id>/resolve/", views.run_resolve, name="runs-resolve"),
    path("api/runs/<str:run_id>/version/", views.run_version, name="runs-version"),
    path("api/runs/<str:run_id>/warnings/", views.run_warnings, name="runs-warnings"),
    path("workflows/<str:name>/preview/", views.workflow_preview, name="runs-workflow-preview"),
    path("workflows/<str:name>/preview/fetch/", views.workflow_fetch, name="runs-workflow-fetch"),
    re_path(r"^api/", api.api_not_found, name="api-not-found"),  # last: the API's JSON 404
]
