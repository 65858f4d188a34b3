"""A trained tokenizer as a content-addressed artifact file, and how run records cite it.

A tokenizer is defined by one file (``tokenizer.json``, a SentencePiece ``.model``, a ``ulmfit-vocab`` JSON); it
is stored as ``results/tokenizers/<sha256>.<json|model>``, the name being the sha256 of the content, written
atomically (a temporary file, then a rename; ``harness.records.atomic_write_bytes``, as checkpoints are). Saving
the same tokenizer again writes nothing. Loading by hash or by path checks a file named by a hash against its
content first. A run record cites a tokenizer in ``artifacts``: ``tokenizer`` (the path) and ``tokenizer_sha256``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from harness.errors import HarnessError
from harness.records import atomic_write_bytes, file_sha256
from tasks.tokenizers.core import Template, Tokenizer

TOKENIZERS_DIR = Path("results/tokenizers")
PATH_ARTIFACT, SHA_ARTIFACT = "tokenizer", "tokenizer_sha256"  # the record's artifacts keys
SHA256 = re.compile(r"[0-9a-f]{64}")


def extension(tokenizer: Tokenizer) -> str:
    """``model`` for a SentencePiece model, else ``json``."""
    from tasks.tokenizers.spm import SentencePieceBackend

    return "model" if isinstance(tokenizer.backend, SentencePieceBackend) else "json"


def save_tokenizer(tokenizer: Tokenizer, folder: Path | str = TOKENIZERS_DIR) -> Path:
    """Store ``tokenizer``'s defining file as ``folder/<sha256>.<ext>`` (nothing is written when an intact copy is
    there) and return its path."""
    data = tokenizer.backend.content()
    sha256 = hashlib.sha256(data).hexdigest()
    path = Path(folder) / f"{sha256}.{extension(tokenizer)}"
    if not path.is_file() or file_sha256(path) != sha256:
        atomic_write_bytes(path, data, overwrite=True)
    return path


def artifact_path(reference: str | Path, folder: Path | str = TOKENIZERS_DIR) -> Path:
    """The file of a tokenizer given by its sha256 (looked up in ``folder``) or by its path."""
    if isinstance(reference, str) and SHA256.fullmatch(reference):
        found = sorted(Path(folder).glob(f"{reference}.*"))
        if not found:
            raise HarnessError(f"{Path(folder) / reference}.*: no tokenizer artifact with sha256 {reference}")
        return found[0]
    return Path(reference)


def read_artifact(path: Path) -> bytes:
    """The bytes of a tokenizer file; a file named ``<sha256>.<ext>`` must have that hash."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the tokenizer: {exc.strerror or exc}") from None
    expected, actual = path.name.split(".")[0], hashlib.sha256(data).hexdigest()
    if SHA256.fullmatch(expected) and actual != expected:
        raise HarnessError(f"{path}: tokenizer sha256 does not match its name: actual {actual} (file changed)")
    return data


def tokenizer_of(data: bytes, suffix: str, template: Template | None = None) -> Tokenizer:
    """The :class:`Tokenizer` a file's bytes define, by its suffix and (JSON) its content."""
    if suffix == ".model":
        from tasks.tokenizers.spm import sentencepiece_tokenizer

        return sentencepiece_tokenizer(data, template)
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HarnessError(f"not a tokenizer JSON file ({exc})") from None
    document = document if isinstance(document, dict) else {}
    kind = document.get("format") or document.get("scheme") or ("tokenizers" if "model" in document else None)
    if kind == "ulmfit-vocab":
        from tasks.tokenizers.ulmfit import ulmfit_tokenizer

        return ulmfit_tokenizer(data, *([template] if template else []))
    if kind == "whitespace-crc32":
        from tasks.tokenizers.words import WhitespaceTokenizer

        return WhitespaceTokenizer(document["vocab_size"])
    if kind == "wikitext-words":
        from tasks.tokenizers.words import wikitext_tokenizer

        return wikitext_tokenizer(document["itos"], *([template] if template else []))
    if kind == "tokenizers":
        from tasks.tokenizers.hf import hf_tokenizer

        return hf_tokenizer(data, template)
    raise HarnessError(
        "not a tokenizer file: a tokenizers tokenizer.json, or a ulmfit-vocab, wikitext-words or whitespace-crc32 JSON"
    )


def load_tokenizer(
    reference: str | Path, folder: Path | str = TOKENIZERS_DIR, template: Template | None = None
) -> Tokenizer:
    """A stored tokenizer, by sha256 (in ``folder``) or path, its hash checked; errors name the file."""
    path = artifact_path(reference, folder)
    data = read_artifact(path)
    try:
        return tokenizer_of(data, path.suffix, template)
    except HarnessError as exc:
        raise HarnessError(f"{path}: {exc}") from None


def tokenizer_artifacts(path: Path | str) -> dict[str, str]:
    """A run record's ``artifacts`` citing the tokenizer stored at ``path`` (its hash checked)."""
    data = read_artifact(Path(path))
    return {PATH_ARTIFACT: str(path), SHA_ARTIFACT: hashlib.sha256(data).hexdigest()}


def register(owner: object, tokenizer: Tokenizer, folder: Path | str = TOKENIZERS_DIR) -> dict[str, str]:
    """Store a tokenizer trained during a run and have the run's records cite it: ``owner`` is the run's data
    module or system, whose ``record_artifacts`` the runner adds to each record's ``artifacts``."""
    cited = tokenizer_artifacts(save_tokenizer(tokenizer, folder))
    owner.record_artifacts = {**getattr(owner, "record_artifacts", {}), **cited}
    return cited
