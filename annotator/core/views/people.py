"""The accounts page of operators (staff): make a requester or researcher account."""

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.debug import sensitive_post_parameters

from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.models.audit import AuditAction, AuditEvent
from annotator.core.selectors.access import is_operator
from annotator.core.services.people import MADE_BY_OPERATORS, account_create

RECENT = 20


class AccountForm(forms.Form):
    username = forms.CharField(label="User name", max_length=150, widget=forms.TextInput(attrs={"autofocus": True}))
    email = forms.EmailField(label="Email (optional)", required=False)
    role = forms.ChoiceField(label="Role", choices=[(r, Role(r).label) for r in MADE_BY_OPERATORS])
    password = forms.CharField(
        label="First password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Tell them to change it. At least 8 characters, not only digits, not common, not like the name.",
    )


@sensitive_post_parameters("password")
def accounts_page(request):
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not is_operator(request.user):
        raise PermissionDenied("Only staff can make requester and researcher accounts.")
    form = AccountForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                user = account_create(actor=request.user, **form.cleaned_data)
            except ApplicationError as error:
                form.add_error(
                    error.extra.get("field") if error.extra.get("field") in form.fields else None, error.message
                )
            else:
                messages.success(request, f"Account {user.username} ({form.cleaned_data['role']}) made.")
                return redirect("accounts-new")
        status = 400
    recent = (
        AuditEvent.objects.filter(action=AuditAction.ACCOUNT_CREATE)
        .select_related("actor", "subject_user")
        .order_by("-id")[:RECENT]
    )
    return render(request, "people/new.html", {"form": form, "recent": recent}, status=status)


urlpatterns = [path("accounts/new/", accounts_page, name="accounts-new")]
