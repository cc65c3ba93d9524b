"""An example annotator plugin: captions and images meet in a space of eight colour words.

A caption is the count of the colour words it names; an image is how close its mean colour lies to each
of the eight colours. Crude, but a real joint embedding: "a red bus" ranks the red images first. It shows
the whole plugin interface: the `directions` it ranks, `weights_hash`, `encode_texts`, `encode_images`.
"""

import hashlib
import json

import numpy as np
import torch
import torch.nn.functional as F

from workers.ranking.annotators import Annotator

COLOURS = {
    "red": (220, 30, 30),
    "green": (30, 170, 40),
    "blue": (30, 60, 220),
    "yellow": (230, 220, 40),
    "white": (245, 245, 245),
    "black": (15, 15, 15),
    "orange": (240, 140, 20),
    "purple": (130, 40, 160),
}


class ColourWordsAnnotator(Annotator):
    directions = ("i2t", "t2i", "t2t", "i2i")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sharpness = float(self.config.get("sharpness", 0.02))  # how fast closeness falls with distance
        self.palette = np.array(list(COLOURS.values()), dtype=np.float32)

    def weights_hash(self) -> str:
        spec = json.dumps({"colours": COLOURS, "sharpness": self.sharpness, "v": 1}, sort_keys=True)
        return hashlib.sha256(spec.encode()).hexdigest()

    def encode_texts(self, texts):
        rows = torch.zeros(len(texts), len(COLOURS))
        for row, text in enumerate(texts):
            words = text.lower().replace(".", " ").replace(",", " ").split()
            for column, colour in enumerate(COLOURS):
                rows[row, column] = float(words.count(colour))
        return F.normalize(rows + 1e-6, dim=1)  # a caption without colour words ties with every image

    def encode_images(self, images):
        means = np.stack(
            [np.asarray(image.convert("RGB"), dtype=np.float32).reshape(-1, 3).mean(0) for image in images]
        )
        distances = np.linalg.norm(means[:, None, :] - self.palette[None, :, :], axis=2)
        closeness = torch.from_numpy(np.exp(-self.sharpness * distances).astype(np.float32))
        return F.normalize(closeness, dim=1)
