import pytest


@pytest.fixture(autouse=True)
def _media_in_tmp(settings, tmp_path):
    """Every test writes its files under its own temporary directory, never into var/."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Factories hash a password per user; the production hasher would make every test slow."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: the API throttles count requests per address in it, and the
    schemathesis run alone makes more calls from 127.0.0.1 than a minute allows, which would refuse the
    next test's calls with 429."""
    from django.core.cache import cache

    cache.clear()
