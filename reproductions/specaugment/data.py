"""Data preparation of SpecAugment's budget tier: the espeak-ng speech corpus (tasks.debian_corpora.speech)."""

from __future__ import annotations

from pathlib import Path

from tasks.debian_corpora.speech import MAX_WORDS, build_speech


def prepare_espeak_speech(
    root: Path, train: int = 6000, dev: int = 300, test: int = 300, workers: int = 2, max_words: int = MAX_WORDS
) -> Path:
    """Build (once; a complete corpus is left alone) the espeak-ng corpus at ``root``, of sentences of at most
    ``max_words`` words; returns ``root``."""
    build_speech(Path(root), train=train, dev=dev, test=test, workers=workers, max_words=max_words)
    return Path(root)


def lm_text(root: Path, splits: dict[str, list[str]]) -> Path:
    """Write ``root/lm-<name>.txt``, one sentence per line, for each ``name`` of ``splits`` (atomic, once)."""
    from tasks.imagenet.fixtures import atomic_fixture

    def write(tmp: Path) -> None:
        for name, sentences in splits.items():
            (tmp / f"lm-{name}.txt").write_text("".join(f"{s}\n" for s in sentences), encoding="utf-8")

    spec = {"fixture": "specaugment-lm-text", "sha256": _sentences_hash(splits)}
    return atomic_fixture(Path(root), spec, write)


def _sentences_hash(splits: dict[str, list[str]]) -> str:
    import hashlib

    text = "".join(f"{name}\n" + "".join(f"{s}\n" for s in sentences) for name, sentences in sorted(splits.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def prepare_lm_text(root: Path) -> Path:
    """The budget fusion LM's text, in the LibriSpeech LM corpus's format (``librispeech-lm-norm.txt``: one
    upper-case sentence per line, punctuation removed): every sentence of the Debian text corpus's training documents
    that the espeak-ng corpus could speak, normalised as its transcripts are (``tasks.debian_corpora.speech``:
    ``sentences``), as ``lm-train.txt`` (345,154 sentences, 2.9 M words on this machine's packages); those of the
    test documents as ``lm-test.txt``. The speech corpus's training sentences are among the LM's (LibriSpeech's LM
    corpus likewise shares books with its training speech); no test sentence is."""
    from tasks.debian_corpora.corpus import collect
    from tasks.debian_corpora.speech import sentences

    if (Path(root) / "lm-train.txt").is_file():
        return Path(root)
    kept = collect(Path("/"))
    return lm_text(root, {name: [words for _, words in sentences(kept, name)] for name in ("train", "test")})


def prepare_smoke_lm(root: Path, speech_root: Path) -> Path:
    """The smoke fusion chain's data: the three-utterance speech fixture at ``speech_root`` (whose transcripts the
    word pieces are learnt from) and its transcripts as the LM's training and test text at ``root``."""
    from tasks.librispeech.fixtures import UTTERANCES, write_tiny_librispeech

    write_tiny_librispeech(Path(speech_root))
    transcripts = [text for _, _, text in UTTERANCES]
    return lm_text(root, {"train": transcripts, "test": transcripts})
