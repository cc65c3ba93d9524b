from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET

from annotator.core.selectors.access import user_role


@require_GET
def home(request):
    """Everyone lands here; each role sees the links to its own pages (anonymous visitors: log in). A
    researcher has one area, so lands on it: Labels & evaluation."""
    role = user_role(request.user)
    if role == "researcher":
        return redirect("research-home")
    return render(request, "home.html", {"role": role})


urlpatterns = [path("", home, name="home")]
