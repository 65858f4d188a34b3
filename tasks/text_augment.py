"""Text augmentations for consistency training: TF-IDF based word replacement, SwitchOut, and back-translation read
from a file.

TF-IDF replacement and back-translation come from UDA (Xie et al., arXiv 1904.12848v6, Section 2.3 and Appendix
A.2); SwitchOut from Wang, Pham, Dai and Neubig (arXiv 1808.07512, EMNLP 2018), which UDA compares in its Table 2.
The word-level ones work on lists of words.
:func:`words` splits a text as BERT's basic tokenizer splits it into words (lower-cased runs of letters, digits and
apostrophes; every other non-space character a word of its own), the unit the paper replaces.

**TF-IDF word replacement** (:class:`TfidfWordReplacement`): keep the informative words, replace uninformative ones
with other uninformative words. ``IDF(w) = log(N / df(w))`` over the ``N`` documents of the corpus it is fitted on
(the paper says only "computed on the whole corpus"; this is the textbook form); in a text ``x`` of ``|x|`` words,
``TF(w)`` = count / ``|x|`` and ``TFIDF(w) = TF(w) IDF(w)``. With ``C = max_i TFIDF(x_i)``, word ``i`` is replaced
with probability ``min(p (C - TFIDF(x_i)) / Z, 1)``, ``Z = sum_i (C - TFIDF(x_i)) / |x|`` (when every word scores
the same, ``Z = 0`` and each is replaced with probability ``p``). A replacement is drawn from the corpus
vocabulary with probability ``(max_w' S(w') - S(w)) / Z'``, ``S(w) = freq(w) IDF(w)`` (``freq``: the word's count
in the corpus), so frequent and rare-but-spread keywords are unlikely picks. ``p`` is 0.7 for DBpedia in the paper.

**SwitchOut** (:class:`SwitchOut`): for a text of ``L`` words, draw how many to replace, ``n`` in ``{0, ..., L}``
with ``P(n) ~ exp(-n / tau)`` (``tau`` the temperature), choose ``n`` distinct positions uniformly, and put at each
a word drawn uniformly from the corpus vocabulary other than the word there, so the copy is at Hamming distance
exactly ``n`` (SwitchOut's appendix code adds a uniform draw from ``1..V-1`` to the id modulo ``V``: never the same
token). The vocabulary is the words of the corpus it is fitted on, as UDA's released code builds its word vocabulary
from the examples it augments; UDA says only that Switchout "replaces a token with a random token uniformly sampled
from the vocabulary". ``P(n)`` is a geometric law cut at ``L``, sampled by inverting its distribution function.

**Back-translation** (:class:`Paraphrases`): the paper paraphrases each unlabelled text by translating it to French
and back (WMT'14 models, random sampling at temperature 0.7-0.9). No translation model can be run here, so the
paraphrases are produced elsewhere and read from a file. The format, UTF-8 text, one paraphrase per line::

    <example id><TAB><paraphrase>

where ``<example id>`` is the id the data module gives the text (for the Zhang et al. CSV corpora: the 0-based row
number in ``train.csv``), and the paraphrase has no TAB or newline (escape newlines as the two characters ``\\n``,
as the CSVs do). An id may have several lines: each use draws one of them uniformly. Lines starting with ``#`` and
blank lines are skipped. An example without a line is left unchanged (``missing="keep"``) or is an error
(``missing="error"``). Produce it with any translation system, e.g. Fairseq's or Marian's English-French and
French-English models, sampling each direction at temperature 0.9, then writing ``id<TAB>text`` per output.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import accumulate
from pathlib import Path

from harness.errors import HarnessError

_WORD = re.compile(r"[a-z0-9']+|[^\sa-z0-9']", re.IGNORECASE)


def words(text: str) -> list[str]:
    """Lower-cased words and punctuation marks of ``text``."""
    return [w.lower() for w in _WORD.findall(text)]


class TfidfWordReplacement:
    """Fitted on a corpus of texts (each a list of words); called on one text's words, returns the augmented words."""

    def __init__(self, corpus: Iterable[Sequence[str]], p: float = 0.7, rng: random.Random | None = None) -> None:
        if not 0 <= p:
            raise HarnessError(f"TF-IDF word replacement: p must be non-negative; got {p}")
        df: Counter[str] = Counter()
        freq: Counter[str] = Counter()
        documents = 0
        for doc in corpus:
            documents += 1
            freq.update(doc)
            df.update(set(doc))
        if not documents or not freq:
            raise HarnessError("TF-IDF word replacement: the corpus it is fitted on is empty")
        self.p, self.rng = p, rng
        self.idf = {w: math.log(documents / n) for w, n in df.items()}
        self.vocab = sorted(freq)
        score = [freq[w] * self.idf[w] for w in self.vocab]  # S(w)
        top = max(score)
        self.cumulative = list(accumulate(top - s for s in score))  # sampling weights max S - S(w)
        if self.cumulative[-1] <= 0:  # every word scores the same: draw uniformly
            self.cumulative = list(range(1, len(self.vocab) + 1))

    def replace_probabilities(self, text: Sequence[str]) -> list[float]:
        """``min(p (C - TFIDF(x_i)) / Z, 1)`` for each word of ``text`` (unknown words have IDF 0)."""
        if not text:
            return []
        counts = Counter(text)
        tfidf = [counts[w] / len(text) * self.idf.get(w, 0.0) for w in text]
        top = max(tfidf)
        gaps = [top - s for s in tfidf]
        z = sum(gaps) / len(text)
        if z <= 0:
            return [min(self.p, 1.0)] * len(text)
        return [min(self.p * g / z, 1.0) for g in gaps]

    def sample_word(self, rng: random.Random) -> str:
        """A replacement word, with probability proportional to ``max S - S(w)``."""
        return rng.choices(self.vocab, cum_weights=self.cumulative, k=1)[0]

    def __call__(self, text: Sequence[str]) -> list[str]:
        rng = self.rng or random
        probabilities = self.replace_probabilities(text)
        return [self.sample_word(rng) if rng.random() < q else w for w, q in zip(text, probabilities, strict=True)]


class SwitchOut:
    """Fitted on a corpus of texts (each a list of words: its vocabulary); called on one text's words, returns the
    copy with ``n ~ P(n) ~ exp(-n / tau)`` of its words replaced by other vocabulary words."""

    def __init__(self, corpus: Iterable[Sequence[str]], tau: float = 1.25, rng: random.Random | None = None) -> None:
        if not tau > 0:
            raise HarnessError(f"SwitchOut: the temperature tau must be positive; got {tau}")
        self.vocab = sorted({w for doc in corpus for w in doc})
        if len(self.vocab) < 2:
            raise HarnessError("SwitchOut: the corpus it is fitted on has fewer than 2 distinct words")
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.tau, self.rng = tau, rng

    def count_probabilities(self, length: int) -> list[float]:
        """``P(n) = exp(-n / tau) / sum_m exp(-m / tau)`` for ``n = 0 .. length``."""
        weights = [math.exp(-n / self.tau) for n in range(length + 1)]
        total = sum(weights)
        return [w / total for w in weights]

    def sample_count(self, length: int, rng: random.Random) -> int:
        """``n`` from ``P(n)`` by inversion: with ``q = exp(-1/tau)``, ``P(n <= k) = (1 - q^(k+1)) / (1 - q^(L+1))``."""
        log_q = -1.0 / self.tau
        u = rng.random() * -math.expm1((length + 1) * log_q)  # u (1 - q^(L+1)), in [0, 1 - q^(L+1))
        return min(int(math.log1p(-u) / log_q), length)  # the smallest k with P(n <= k) > u

    def sample_word(self, rng: random.Random, other: str) -> str:
        """A vocabulary word drawn uniformly among those that are not ``other``."""
        skip = self.index.get(other)
        i = rng.randrange(len(self.vocab) - (skip is not None))
        return self.vocab[i + (skip is not None and i >= skip)]

    def __call__(self, text: Sequence[str]) -> list[str]:
        rng = self.rng or random
        out = list(text)
        for position in rng.sample(range(len(out)), self.sample_count(len(out), rng)):
            out[position] = self.sample_word(rng, out[position])
        return out


class Paraphrases:
    """Pre-computed back-translations: ``id -> [paraphrase, ...]`` read from the file format above."""

    def __init__(self, path: str | Path, missing: str = "keep", rng: random.Random | None = None) -> None:
        if missing not in ("keep", "error"):
            raise HarnessError(f"paraphrases: missing must be 'keep' or 'error'; got {missing!r}")
        self.path, self.missing, self.rng = Path(path), missing, rng
        self.table = read_paraphrases(self.path)

    def __call__(self, example_id: str, text: str) -> str:
        options = self.table.get(str(example_id))
        if not options:
            if self.missing == "error":
                raise HarnessError(f"{self.path}: no paraphrase for example id {example_id!r}")
            return text
        return (self.rng or random).choice(options)


def read_paraphrases(path: Path) -> dict[str, list[str]]:
    """The ``<id><TAB><paraphrase>`` lines of ``path``; errors name the file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read paraphrases: {exc}") from None
    table: dict[str, list[str]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        example_id, tab, text = line.partition("\t")
        if not tab or not example_id.strip() or not text.strip() or "\t" in text:
            raise HarnessError(
                f"{path}:{number}: expected '<example id><TAB><paraphrase>' (one TAB), got {line[:60]!r}"
            )
        table.setdefault(example_id.strip(), []).append(text.replace("\\n", "\n"))
    if not table:
        raise HarnessError(f"{path}: no paraphrases")
    return table
