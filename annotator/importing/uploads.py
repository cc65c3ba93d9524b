"""Uploaded files (browser form) copied to a temporary folder for the import's two passes."""

from pathlib import Path

from annotator.errors import ApplicationError


def save_upload(upload, folder: Path, stem: str, suffixes: tuple[str, ...]) -> Path:
    """Copy an upload into `folder` as `<stem><suffix>`; the person's file name is never used as a path."""
    name = (upload.name or "").lower()
    suffix = next((s for s in sorted(suffixes, key=len, reverse=True) if name.endswith(s)), None)
    if suffix is None:
        raise ApplicationError(f"The {stem} file must end with one of: {', '.join(suffixes)}.")
    path = Path(folder) / f"{stem}{suffix}"
    with open(path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path
