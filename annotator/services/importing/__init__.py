"""Dataset imports: validate images and captions, store them, and the upload task protocol."""
