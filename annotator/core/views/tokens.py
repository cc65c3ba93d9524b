"""API tokens on the user's page: make one (or a fresh one), revoke it. Any logged-in role may hold one."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from annotator.core.selectors.access import user_role
from annotator.core.services.tokens import token_create, token_revoke


@login_required
@require_http_methods(["GET"])
def token_page(request):
    from rest_framework.authtoken.models import Token

    token = Token.objects.filter(user=request.user).first()
    return render(request, "tokens/tokens.html", {"token": token, "role": user_role(request.user)})


@login_required
@require_POST
def token_make(request):
    token_create(user=request.user)
    messages.success(request, "A new API token was made; any older one no longer works.")
    return redirect("api-token")


@login_required
@require_POST
def token_delete(request):
    if token_revoke(user=request.user):
        messages.success(request, "Your API token was revoked.")
    return redirect("api-token")


urlpatterns = [
    path("account/token/", token_page, name="api-token"),
    path("account/token/new", token_make, name="api-token-new"),
    path("account/token/revoke", token_delete, name="api-token-revoke"),
]
