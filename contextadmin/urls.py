from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("nested_admin/", include("nested_admin.urls")),
    path("", include("runs.urls")),
]
