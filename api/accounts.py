"""/api/v1/accounts/: staff make requester and researcher accounts (crowd workers sign up themselves)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.core.services.people import MADE_BY_OPERATORS, account_create
from api.schema import errors


class AccountCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=128, write_only=True, trim_whitespace=False)
    role = serializers.ChoiceField(choices=[str(role) for role in MADE_BY_OPERATORS])
    email = serializers.EmailField(required=False, default="")


class AccountSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField()
    role = serializers.CharField()


class AccountCreateView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=AccountCreateSerializer, responses={201: AccountSerializer, **errors(403)})
    def post(self, request):
        """Make a requester or researcher account (staff only, 403 otherwise); its password is checked by
        the same validators as a sign-up. An audit event records who made it."""
        data = AccountCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = account_create(actor=request.user, **data.validated_data)
        body = {"id": user.pk, "username": user.username, "email": user.email, "role": data.validated_data["role"]}
        return Response(AccountSerializer(body).data, status=status.HTTP_201_CREATED)
