#!/usr/bin/env bash
# A local stand-in for the official python:3.11-slim, for machines without an image registry (see
# docs/operations.md, "The production image, built and run here"): a minimal Debian bookworm made with
# debootstrap from the Debian mirror, with bookworm's own Python 3.11, `python` and `pip` on PATH as in the
# official image, and pip allowed to install into the system Python (the image is the isolation).
#
#     bench/image_base.sh            # makes and tags python:3.11-slim unless that tag exists
#     BASE_FORCE=1 bench/image_base.sh
#
# Needs root, debootstrap and podman. The host's extra certificate authorities (/usr/local/share/
# ca-certificates) are copied in, so pip inside a build can reach the package index through this machine's
# egress proxy; on a machine without one there is nothing to copy.
set -euo pipefail

BASE_TAG=${BASE_TAG:-python:3.11-slim}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PODMAN=${PODMAN:-podman --runtime runc}

if [[ -z "${BASE_FORCE:-}" ]] && $PODMAN image exists "$BASE_TAG"; then
    echo "base image $BASE_TAG already there"
    exit 0
fi

root=$(mktemp -d /var/tmp/vericap-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase \
    --include=python3,python3-pip,python3-venv,ca-certificates,libgomp1 \
    bookworm "$root" "$MIRROR"

# As python:3.11-slim: `python` is Python 3.11, pip installs system-wide (no PEP 668 marker), C.UTF-8.
ln -sf python3 "$root/usr/bin/python"
ln -sf pip3 "$root/usr/bin/pip"
rm -f "$root"/usr/lib/python3.*/EXTERNALLY-MANAGED
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null
fi
# Smaller: no apt lists, no docs, no caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*

tar -C "$root" -c . | $PODMAN import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    - "$BASE_TAG"
$PODMAN run --rm "$BASE_TAG" python -c 'import sys; print("base image", sys.version.split()[0])'
