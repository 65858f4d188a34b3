"""The one tokenizer interface (tasks.tokenizers): every scheme's offsets, pairs, special tokens, batches and
decoding; deterministic training on real text (WordNet's glosses); ULMFiT's rules and ELMo's character ids on
written cases; content-addressed artifacts and the run records that cite them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest
import torch
import yaml

from harness import configfile, registry, runner
from harness.contract import cited_artifacts
from harness.errors import HarnessError
from harness.records import file_sha256, read_record
from tasks.debian_corpora.sources import read_wordnet
from tasks.debian_corpora.tokenize import tokenize as wikitext_tokenize
from tasks.tokenizers import (
    BERT_TEMPLATE,
    XLNET_TEMPLATE,
    Template,
    Tokenizer,
    batch_tokenizer,
    load_tokenizer,
    make_tokenizer,
    register,
    save_tokenizer,
)
from tasks.tokenizers.bpe_learn import learn_bpe
from tasks.tokenizers.elmo import batch_char_ids, sentence_char_ids, word_char_ids
from tasks.tokenizers.hf import train_bpe, train_wordpiece
from tasks.tokenizers.spm import train_sentencepiece
from tasks.tokenizers.ulmfit import SPECIAL_TOKENS, build_ulmfit_vocab, ulmfit_tokens, vocab_itos
from tasks.tokenizers.words import WhitespaceTokenizer, wikitext_tokenizer

WORDNET = Path("/usr/share/wordnet/data.noun")
SENTENCES = [
    "A person who studies the structure of rocks.",
    'the act of moving something from one place to another; "he made two trips"',
    "Hello   world, it's 3.5 km/h well-known (really)!",
]


@pytest.fixture(scope="module")
def glosses() -> list[str]:
    """The first 3,000 glosses of WordNet 3.0 (Debian's wordnet-base, which setup.sh installs)."""
    if not WORDNET.is_file():
        pytest.skip(f"{WORDNET} is missing: install wordnet-base (setup.sh)")
    documents = read_wordnet(Path("/"))
    return [next(documents).paragraphs[0] for _ in range(3000)]


@pytest.fixture(scope="module")
def trained(glosses: list[str]) -> dict[str, Tokenizer]:
    return {
        "byte-bpe": train_bpe(glosses, 600),
        "char-bpe": train_bpe(glosses, 600, byte_level=False, special_tokens=["<unk>"]),
        "wordpiece": train_wordpiece(glosses, 600),
        "unigram": unigram(glosses),
        "ulmfit": build_ulmfit_vocab(glosses),
    }


def unigram(glosses: list[str]) -> Tokenizer:
    """XLNet's kind of SentencePiece model, on a third of the glosses (unigram training is the slowest)."""
    return train_sentencepiece(glosses[:1000], 300, control_symbols=["<cls>", "<sep>"], template=XLNET_TEMPLATE)


def source_text(scheme: str, token: str) -> str:
    """What a token of ``scheme`` spells in the text it came from (ASCII text, case aside)."""
    return {
        "byte-bpe": token.replace("Ġ", "").replace("Ċ", ""),
        "char-bpe": token.removesuffix("</w>"),
        "wordpiece": token.removeprefix("##"),
        "unigram": token.lstrip("▁"),
    }.get(scheme, token)


# --- offsets, pairs, special tokens ------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["byte-bpe", "char-bpe", "wordpiece", "unigram", "ulmfit"])
def test_offsets_map_back_to_the_source_text(trained: dict[str, Tokenizer], glosses: list[str], scheme: str) -> None:
    tokenizer, checked = trained[scheme], 0
    for text in [*SENTENCES, *glosses[:200]]:
        encoding = tokenizer.encode(text, special_tokens=False)
        assert len(encoding.ids) == len(encoding.tokens) == len(encoding.offsets) > 0
        for token, (start, end) in zip(encoding.tokens, encoding.offsets, strict=True):
            if token in tokenizer.special_tokens.values() or token in ("xxmaj", "xxup") or not text.isascii():
                continue
            assert text[start:end].lower() == source_text(scheme, token).lower(), (text, token, start, end)
            checked += 1
    assert checked > 1000


def test_wikitext_words_are_the_lm_corpus_tokens_with_offsets(glosses: list[str]) -> None:
    tokenizer = wikitext_tokenizer(["<unk>", "<eos>", "the", "@-@"])
    for text in [*SENTENCES, "1,000 and 3.5; don't @-@ x_y", *glosses[:500]]:
        encoding = tokenizer.encode(text)
        assert encoding.tokens == wikitext_tokenize(text)
        for token, (start, end) in zip(encoding.tokens, encoding.offsets, strict=True):
            assert text[start:end] == token or (f"@{text[start:end]}@" == token and end - start == 1)
    assert tokenizer.encode("the well-known").ids == [2, 0, 3, 0] and tokenizer.special_ids == {"unk": 0, "eos": 1}


def test_pairs_follow_the_template(trained: dict[str, Tokenizer]) -> None:
    wordpiece = trained["wordpiece"]
    pair = wordpiece.encode_pair("a dog", "an animal")
    a, b = (wordpiece.encode(t, special_tokens=False) for t in ("a dog", "an animal"))
    assert pair.ids == [wordpiece.cls_token_id, *a.ids, wordpiece.sep_token_id, *b.ids, wordpiece.sep_token_id]
    assert pair.type_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert pair.sequence_ids == [None, *[0] * len(a), None, *[1] * len(b), None]
    assert pair.offsets[len(a) + 2 :][: len(b)] == b.offsets  # offsets into the second text
    assert wordpiece("a dog", "an animal") == pair.ids
    xlnet = trained["unigram"]  # XLNet: A <sep> B <sep> <cls>, <cls> in segment 2
    pair = xlnet.encode_pair("a dog", "an animal")
    assert pair.tokens[-1] == "<cls>" and pair.type_ids[-1] == 2 and pair.tokens.count("<sep>") == 2
    assert pair.ids[-1] == xlnet.cls_token_id == xlnet.special_ids["cls"]


def test_special_tokens_by_role(trained: dict[str, Tokenizer]) -> None:
    assert trained["wordpiece"].special_tokens == {
        "pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]",
    }  # fmt: skip
    assert trained["wordpiece"].special_ids == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
    assert trained["byte-bpe"].special_tokens == {"eos": "<|endoftext|>"} and trained["byte-bpe"].eos_token_id == 0
    assert not hasattr(trained["byte-bpe"], "pad_token_id")  # a role the scheme lacks
    assert trained["unigram"].special_ids == {"unk": 0, "bos": 1, "eos": 2, "cls": 3, "sep": 4}
    ulmfit = trained["ulmfit"]
    assert ulmfit.special_ids == {"unk": 0, "pad": 1, "bos": 2, "eos": 3}
    assert ulmfit.encode("Hi").tokens[:2] == ["xxbos", "xxmaj"]
    with pytest.raises(HarnessError, match=r"special token '\[CLS\]' is not in its vocabulary"):
        Tokenizer(trained["byte-bpe"].backend, BERT_TEMPLATE)  # the first special token of the template


# --- batches, truncation, decoding -------------------------------------------------------------------------------


def test_batches_pad_and_truncate(trained: dict[str, Tokenizer]) -> None:
    wordpiece = trained["wordpiece"]
    long, short = "the structure of rocks and minerals in the earth", "the"
    batch = wordpiece.encode_batch([long, short], max_length=8)
    assert batch["input_ids"].shape == (2, 8) and batch["offsets"].shape == (2, 8, 2)
    assert batch["input_ids"][0].tolist() == wordpiece.encode(long).ids[:7] + [wordpiece.sep_token_id]
    n_short = len(wordpiece.encode(short))
    assert batch["attention_mask"][1].tolist() == [1] * n_short + [0] * (8 - n_short)
    assert (batch["input_ids"][1, n_short:] == wordpiece.pad_token_id).all()
    assert batch["offsets"][1, 0].tolist() == [-1, -1] and batch["offsets"][1, 1].tolist() == [0, 3]
    pairs = wordpiece.encode_batch([long], [short], max_length=6, return_tensors=False)
    # longest first: the long text gives up tokens until the 3 specials and both texts fit in 6
    assert pairs["input_ids"][0] == [2, *wordpiece.encode(long).ids[1:3], 3, *wordpiece.encode(short).ids[1:-1], 3]
    assert pairs["token_type_ids"][0] == [0, 0, 0, 0, 1, 1]
    wide = wordpiece.encode_batch([short], max_length=12, pad_to_max_length=True)
    assert wide["input_ids"].shape == (1, 12) and wide["input_ids"].dtype == torch.long
    with pytest.raises(HarnessError, match="max_length 1 is shorter than its special tokens"):
        wordpiece.encode_batch([short], max_length=1)


def test_decode_round_trips(trained: dict[str, Tokenizer], glosses: list[str]) -> None:
    text = "Größe: 3½ km — naïve café ☕"
    byte_bpe = trained["byte-bpe"]
    assert byte_bpe.decode(byte_bpe.encode(text).ids) == text  # byte-level BPE encodes and decodes anything
    assert all(trained["unigram"].decode(trained["unigram"].encode(g).ids) == g for g in glosses[:100])
    wordpiece = trained["wordpiece"]
    assert wordpiece.decode(wordpiece.encode("the structure of rocks").ids) == "the structure of rocks"
    assert "[CLS]" in wordpiece.decode(wordpiece.encode("rocks").ids, skip_special_tokens=False)
    assert trained["char-bpe"].decode(trained["char-bpe"].encode("The rocks").ids) == "the rocks"
    ulmfit = trained["ulmfit"]
    assert ulmfit.decode(ulmfit.encode("The act of").ids) == "xxmaj the act of"
    with pytest.raises(HarnessError, match="ids do not decode"):
        WhitespaceTokenizer().decode([5])


# --- the whitespace tokenizer: one copy, the same ids --------------------------------------------------------------


def test_the_whitespace_tokenizer_keeps_glue_and_squad_ids() -> None:
    from tasks.glue.data import WhitespaceTokenizer as GlueWhitespace
    from tasks.squad.data import WhitespaceTokenizer as SquadWhitespace
    from tasks.squad.data import whitespace_tokenizer

    assert GlueWhitespace is SquadWhitespace is WhitespaceTokenizer
    assert isinstance(whitespace_tokenizer(), Tokenizer)

    def word(w: str) -> int:  # the formula both modules used: 3 + crc32(lower-cased word) mod (30522 - 3)
        return 3 + zlib.crc32(w.lower().encode()) % 30519

    tokenizer = WhitespaceTokenizer()
    a, b = "The  cat\tsat\u00a0down.", "Ünïcode words"
    assert tokenizer(a, b) == [1, *map(word, a.split()), 2, *map(word, b.split()), 2]  # GLUE's layout
    encoding = tokenizer.encode(a, special_tokens=False)  # SQuAD's ids and offsets
    assert encoding.ids == list(map(word, a.split())) and [a[s:e] for s, e in encoding.offsets] == a.split()
    assert (tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id) == (0, 1, 2)
    assert WhitespaceTokenizer(vocab_size=100).encode("x").ids == [1, word_in(100, "x"), 2]
    assert tokenizer.digest == WhitespaceTokenizer().digest != WhitespaceTokenizer(100).digest


def test_word_tokenizers_are_artifacts_too(tmp_path: Path) -> None:
    for tokenizer in (WhitespaceTokenizer(100), wikitext_tokenizer(["<unk>", "<eos>", "rock"])):
        loaded = load_tokenizer(save_tokenizer(tokenizer, tmp_path))
        assert loaded.digest == tokenizer.digest and loaded("a rock", "x") == tokenizer("a rock", "x")


def word_in(vocab_size: int, word: str) -> int:
    return 3 + zlib.crc32(word.encode()) % (vocab_size - 3)


# --- deterministic training and artifacts ------------------------------------------------------------------------


def test_training_twice_gives_the_same_file(trained: dict[str, Tokenizer], glosses: list[str], tmp_path: Path) -> None:
    again = {
        "byte-bpe": train_bpe(glosses, 600),
        "char-bpe": train_bpe(glosses, 600, byte_level=False, special_tokens=["<unk>"]),
        "wordpiece": train_wordpiece(glosses, 600),
        "unigram": unigram(glosses),
        "ulmfit": build_ulmfit_vocab(glosses),
    }
    for scheme, tokenizer in trained.items():
        assert again[scheme].digest == tokenizer.digest, scheme
        path = save_tokenizer(tokenizer, tmp_path)
        assert path.name == f"{tokenizer.digest}.{'model' if scheme == 'unigram' else 'json'}"
        assert file_sha256(path) == tokenizer.digest
        before = path.stat().st_mtime_ns
        assert save_tokenizer(again[scheme], tmp_path) == path and path.stat().st_mtime_ns == before  # no-op
        loaded = load_tokenizer(tokenizer.digest, tmp_path, template=tokenizer.template)
        assert loaded.encode(SENTENCES[1]) == tokenizer.encode(SENTENCES[1]) and loaded.digest == tokenizer.digest
    assert train_bpe(glosses, 601).digest != trained["byte-bpe"].digest
    assert build_ulmfit_vocab(glosses, min_freq=3).digest != trained["ulmfit"].digest
    assert len(list(tmp_path.iterdir())) == 5  # no temporary file left behind


def test_learn_bpe_by_hand() -> None:
    """Sennrich et al.'s four words: (e, s) and (s, t) tie at 9, the pair of smaller ids (the alphabet by code point)
    goes first; then (l, o) and (o, w) tie at 7 the same way; min_frequency stops at a count below it."""
    counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    vocab, merges = learn_bpe(counts, 100, special_tokens=["<unk>"], min_frequency=7)
    assert merges == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w")]
    assert vocab["<unk>"] == 0 and [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])][1:4] == list("dei")
    _, suffixed = learn_bpe(counts, 100, min_frequency=9, suffix="</w>")
    assert suffixed == [("e", "s"), ("es", "t</w>")]  # the last symbol carries the suffix
    vocab, prefixed = learn_bpe(counts, 100, min_frequency=9, prefix="##")
    assert prefixed == [("##e", "##s"), ("##es", "##t")] and "##est" in vocab  # a continuing piece keeps one prefix


def test_bpe_learnt_here_is_the_librarys_where_the_library_is_deterministic(glosses: list[str]) -> None:
    """At 600 symbols no tie decides a merge, and the library's own trainers give these very files."""
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    from tasks.tokenizers.hf import BERT_TEMPLATE, _canonical, hf_tokenizer

    library = RustTokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    library.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    library.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    library.decoder = decoders.BPEDecoder(suffix="</w>")
    library.train_from_iterator(glosses, trainers.BpeTrainer(
        vocab_size=600, min_frequency=2, show_progress=False, special_tokens=["<unk>"], end_of_word_suffix="</w>"))  # fmt: skip
    ours = train_bpe(glosses, 600, byte_level=False, special_tokens=["<unk>"])
    assert hf_tokenizer(_canonical(library, ["<unk>"], None)).digest == ours.digest
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    library = RustTokenizer(models.WordPiece(unk_token="[UNK]"))
    library.normalizer = normalizers.BertNormalizer(lowercase=True)
    library.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    library.decoder = decoders.WordPiece()
    library.train_from_iterator(glosses, trainers.WordPieceTrainer(
        vocab_size=600, min_frequency=2, show_progress=False, special_tokens=specials))  # fmt: skip
    library_file = hf_tokenizer(_canonical(library, specials, BERT_TEMPLATE), BERT_TEMPLATE)
    assert library_file.digest == train_wordpiece(glosses, 600).digest


def test_bpe_training_gives_one_file_in_every_process(tmp_path: Path) -> None:
    """At 2,000 symbols the last merges of WordNet's glosses tie at the minimum count: the library's trainer gave four
    different files in four processes; ours gives one."""
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent("""
        from pathlib import Path
        from tasks.debian_corpora.sources import read_wordnet
        from tasks.tokenizers.hf import train_bpe, train_wordpiece
        documents = read_wordnet(Path("/"))
        glosses = [next(documents).paragraphs[0] for _ in range(3000)]
        print(train_bpe(glosses, 2000, byte_level=False, special_tokens=["<unk>"]).digest,
              train_wordpiece(glosses, 2000).digest)
    """)
    )
    if not WORDNET.is_file():
        pytest.skip(f"{WORDNET} is missing: install wordnet-base (setup.sh)")
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    digests = {subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, env=env,
                              cwd=root).stdout for _ in range(3)}  # fmt: skip
    assert len(digests) == 1 and len(digests.pop().split()) == 2


def test_a_tokenizers_file_keeps_its_template(trained: dict[str, Tokenizer], tmp_path: Path) -> None:
    loaded = load_tokenizer(save_tokenizer(trained["wordpiece"], tmp_path))
    assert loaded.template == Template("[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1")
    assert loaded.encode_pair("a", "b") == trained["wordpiece"].encode_pair("a", "b")


def test_a_corrupted_or_missing_artifact_is_one_clear_error(trained: dict[str, Tokenizer], tmp_path: Path) -> None:
    path = save_tokenizer(trained["ulmfit"], tmp_path)
    path.write_bytes(path.read_bytes().replace(b"xxmaj", b"xxmin"))
    with pytest.raises(
        HarnessError, match=rf"^{path}: tokenizer sha256 does not match its name: actual [0-9a-f]{{64}}"
    ):
        load_tokenizer(path)
    with pytest.raises(HarnessError, match=rf"{tmp_path / ('0' * 64)}\.\*: no tokenizer artifact"):
        load_tokenizer("0" * 64, tmp_path)
    other = tmp_path / "vocab.json"
    other.write_text('{"itos": ["a"]}')
    with pytest.raises(HarnessError, match=rf"^{other}: not a tokenizer file"):
        load_tokenizer(other)
    broken = tmp_path / "broken.model"
    broken.write_bytes(b"not a model")
    with pytest.raises(HarnessError, match=rf"^{broken}: not a sentencepiece model"):
        load_tokenizer(broken)


# --- ULMFiT's rules and vocabulary -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The cat", ["xxmaj", "the", "cat"]),  # deal_caps
        ("I LOVE it", ["i", "xxup", "love", "it"]),  # replace_all_caps (one letter: just lower-cased)
        ("McDonald", ["mcdonald"]),  # neither all caps nor capitalised: lower-cased only
        ("so goooood", ["so", "g", "xxrep", "5", "o", "d"]),  # replace_rep: 4+ of one character
        ("wow!!!", ["wow", "!", "!", "!"]),  # three is not a repetition
        ("no no no no way", ["xxwrep", "4", "no", "way"]),  # replace_wrep: a word 4+ times
        ("and/or #1", ["and", "/", "or", "#", "1"]),  # spec_add_spaces
        ("don't can't it's", ["do", "n't", "ca", "n't", "it", "'s"]),  # clitics split off
        ("a<br />b &amp; c #39;d", ["a", "\n", "b", "&", "&", "c", "'d"]),  # fix_html, fastai's order
        ("x &quot;y&quot; &lt;z&gt;", ["x", "&", "'", "y", "&", "'", "<", "z", ">"]),  # 'quot;' first, then unescape
        ("1 @,@ 000 well @-@ known <unk>", ["1,000", "well", "-", "known", "xxunk"]),  # WikiText undone
        ("3.5 km, 2", ["3.5", "km", ",", "2"]),  # numbers keep their inner points and commas
    ],
)
def test_ulmfit_rules(text: str, tokens: list[str]) -> None:
    assert ulmfit_tokens(text)[0] == tokens


def test_ulmfit_offsets_follow_the_rules() -> None:
    text = "So COOL!!!! <br />Bye"
    tokens, offsets = ulmfit_tokens(text)
    spans = [text[s:e] for s, e in offsets]
    assert list(zip(tokens, spans, strict=True)) == [
        ("xxmaj", ""), ("so", "So"), ("xxup", ""), ("cool", "COOL"), ("xxrep", "!!!!"), ("4", "!!!!"), ("!", "!!!!"),
        ("\n", "<br />"), ("xxmaj", ""), ("bye", "Bye"),
    ]  # fmt: skip


def test_ulmfit_vocabulary_follows_fastai() -> None:
    tokens = [["b", "a", "b", "c", "xxmaj"], ["c", "b", "d"]]
    itos = vocab_itos(tokens, max_vocab=60000, min_freq=2)
    assert itos[:9] == list(SPECIAL_TOKENS) and itos[9:11] == ["b", "c"] and "d" not in itos and "a" not in itos
    assert len(itos) == 16 and itos[11:] == ["xxfake"] * 5  # padded to a multiple of 8
    assert vocab_itos(tokens, max_vocab=10, min_freq=1) == [*SPECIAL_TOKENS, "b"]  # cut to max_vocab
    tokenizer = build_ulmfit_vocab(["The cat sat. The cat ran."], min_freq=2)
    assert tokenizer.encode("The dog").tokens == ["xxbos", "xxmaj", "the", "dog"]
    assert tokenizer.encode("The dog").ids[-1] == 0  # xxunk
    assert json.loads(tokenizer.backend.content())["format"] == "ulmfit-vocab"


# --- ELMo's character ids ----------------------------------------------------------------------------------------


def test_elmo_character_ids() -> None:
    cat = word_char_ids("cat")
    assert len(cat) == 50 and cat[:5] == [259, 100, 98, 117, 260] and cat[5:] == [261] * 45  # +1: bow c a t eow pad
    long = word_char_ids("x" * 60)
    assert long[0] == 259 and long[1:49] == [121] * 48 and long[49] == 260  # 48 bytes kept, then end of word
    assert word_char_ids("é")[:4] == [259, 0xC3 + 1, 0xA9 + 1, 260]  # UTF-8 bytes
    sentence = sentence_char_ids(["a", "b"])
    assert len(sentence) == 4 and sentence[0][:4] == [259, 257, 260, 261] and sentence[-1][:4] == [259, 258, 260, 261]
    batch = batch_char_ids([["a"], ["a", "b", "c"]])
    assert batch.shape == (2, 5, 50) and batch.dtype == torch.long
    assert batch[0, :3].tolist() == sentence_char_ids(["a"]) and (batch[0, 3:] == 0).all()  # 0 masks
    assert batch[1].tolist() == sentence_char_ids(["a", "b", "c"]) and int(batch.max()) == 261


# --- data modules and run records --------------------------------------------------------------------------------


def test_text_batches_and_squad_features_take_an_interface_tokenizer(trained: dict[str, Tokenizer]) -> None:
    from tasks.squad.data import SquadExample, featurize, span_text
    from tasks.text_classification.data import Example, example_loader

    wordpiece = trained["wordpiece"]
    examples = [Example("0", "a dog barks", 1), Example("1", "the structure of rocks", 0)]
    texts, labels = next(iter(example_loader(object(), examples, 2, 0, batch_tokenizer(wordpiece), shuffle=False)))
    assert texts["input_ids"][1].tolist() == wordpiece.encode("the structure of rocks").ids and labels.tolist() == [
        1,
        0,
    ]
    assert batch_tokenizer(None) is None and batch_tokenizer(len) is len  # other callables as before
    context = "Granite is an igneous rock of visibly crystalline texture."
    example = SquadExample("q", "what is granite", context, (("igneous rock", 14),), False)
    (feature,) = featurize(example, 0, wordpiece, max_length=64, doc_stride=16, max_query_length=16)
    assert feature.input_ids[0] == wordpiece.cls_token_id
    assert span_text(context, feature.offsets, feature.start_position, feature.end_position) == "igneous rock"


def test_a_run_cites_its_tokenizer(toy: Path, trained: dict[str, Tokenizer], monkeypatch) -> None:
    from tests.conftest import TOY_SRC

    stored = save_tokenizer(trained["wordpiece"], toy / "results" / "tokenizers")
    assert make_tokenizer(str(stored)).digest == trained["wordpiece"].digest  # GLUE's and SQuAD's look-up
    (toy / "tok_digits.py").write_text(
        textwrap.dedent("""
            from tasks.tokenizers import load_tokenizer, register
            from tasks.tokenizers.ulmfit import build_ulmfit_vocab
            from toy_paper.system import DigitsData

            class TokenizedDigits(DigitsData):  # digits need no tokenizer: it is loaded (or trained) and cited
                def __init__(self, data_root, tokenizer=None, batch_size=64):
                    super().__init__(data_root, batch_size)
                    self.tokenizer = load_tokenizer(tokenizer) if tokenizer else None

                def setup(self, stage=None):
                    super().setup(stage)
                    if self.tokenizer is None:  # trained in the run
                        self.tokenizer = build_ulmfit_vocab(["one two", "two one"], min_freq=1)
                        register(self, self.tokenizer, "results/tokenizers")
        """)
    )
    monkeypatch.syspath_prepend(str(toy))
    config = configfile.read(TOY_SRC / "toy_paper" / "configs" / "smoke.yaml").tree
    config["data"] = {"class_path": "tok_digits:TokenizedDigits",
                      "init_args": {**config["data"]["init_args"], "tokenizer": str(stored)}}  # fmt: skip
    config["trainer"]["max_epochs"] = 1
    path = toy / "tokenized.yaml"
    path.write_text(yaml.safe_dump(config))
    (record,) = runner.run(
        registry.reproduction("toy-paper"), "smoke", config_path=path, runs_dir=toy / "results" / "runs"
    )
    artifacts = read_record(record).artifacts
    assert artifacts["tokenizer"] == str(stored) and artifacts["tokenizer_sha256"] == trained["wordpiece"].digest
    del config["data"]["init_args"]["tokenizer"]
    path.write_text(yaml.safe_dump(config))
    (record,) = runner.run(
        registry.reproduction("toy-paper"), "smoke", config_path=path, runs_dir=toy / "results" / "runs"
    )
    artifacts = read_record(record).artifacts
    assert artifacts["tokenizer"] == f"results/tokenizers/{artifacts['tokenizer_sha256']}.json"
    assert file_sha256(toy / artifacts["tokenizer"]) == artifacts["tokenizer_sha256"]
    stored.write_bytes(stored.read_bytes() + b" ")  # a changed file stops the next run before it starts
    config["data"]["init_args"]["tokenizer"] = str(stored)
    config["seed"] = 1
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(HarnessError, match=rf"^{stored}: tokenizer sha256 does not match its name"):
        runner.run(registry.reproduction("toy-paper"), "smoke", config_path=path, runs_dir=toy / "results" / "runs")


def test_a_tokenizer_trained_in_a_run_is_registered(trained: dict[str, Tokenizer], tmp_path: Path) -> None:
    class Owner:  # a run's data module or system
        pass

    owner = Owner()
    cited = register(owner, trained["unigram"], tmp_path)
    assert cited == {"tokenizer": str(tmp_path / f"{trained['unigram'].digest}.model"),
                     "tokenizer_sha256": trained["unigram"].digest}  # fmt: skip
    assert cited_artifacts(owner, object()) == cited  # what the runner adds to every record's artifacts
