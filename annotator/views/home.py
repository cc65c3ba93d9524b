from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from annotator.access import user_role


@require_GET
def home(request):
    """Everyone lands here; each role sees the links to its own pages (anonymous visitors: log in)."""
    return render(request, "home.html", {"role": user_role(request.user)})


urlpatterns = [path("", home, name="home")]
