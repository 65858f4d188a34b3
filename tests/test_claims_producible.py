"""Every paper's claims against what this repository can produce (``tests.claims_check``): a claim no run here can
judge stays ``not-run`` for ever, so each such claim must match a pattern below with the reason, and a new one is a
decision, not an accident. A committed sweep cell (``configs/sweeps/*.yaml``) counts as a run here. A paper that runs its own tiers (``Reproduction.runner``: the SGD width sweep, judged on
its summary records) is checked by its own tests instead."""

from __future__ import annotations

import fnmatch

import pytest

from harness import registry
from harness.claims import registered_claims
from tests.claims_check import producible

UNPRODUCIBLE: dict[str, dict[str, str]] = {
    "efficientnet": {
        "t3-*": "Table 3's scaled MobileNetV1/V2 and ResNet-50 baselines are not built",
        "t5-*-params": "parameters of fine-tuned models: the arch tier profiles the ImageNet heads only",
        "t5-birdsnap-*": "no Birdsnap data module",
        "t5-stanford-cars-*": "no Stanford Cars data module",
        "t5-flowers-102-*": "no Flowers-102 data module",
        "t5-fgvc-aircraft-*": "no FGVC Aircraft data module",
    },
    "mobilenetv3": {
        "t3-*-latency-p1": "latency on a Pixel 1 phone: 'hardware' is no config key, recorded but never judged",
        "t6-*-ap": "COCO test-dev: scored by the evaluation server, no config evaluates it",
        "t8-*-miou": "Cityscapes test: scored by the evaluation server, no config evaluates it",
    },
    "condconv": {
        "v1-abstract-mobilenetv1-0.5-condconv-top1": "v1's CondConv-MobileNetV1(0.5x): its layout is not known",
        "v1-abstract-ssd-*": "the SSD300 detectors are not built",
    },
    "gpt": {
        "t2-mnli-*": "GLUE test sets: scored by the evaluation server; the full configs test on the dev sets",
        "t2-qnli-*": "GLUE test sets: scored by the evaluation server; the full configs test on the dev sets",
        "t2-rte-*": "GLUE test sets: scored by the evaluation server; the full configs test on the dev sets",
        "t4-*": "GLUE test sets: scored by the evaluation server; the full configs test on the dev sets",
        "t5-*": "Table 5's GLUE test numbers (server-scored); the full configs test every row, the LSTM's included, on dev",
        "s41-bookscorpus-perplexity": "BooksCorpus is not here and the report's split is unstated (token-level)",
    },
    "specaugment": {
        "abstract-librispeech-test-other-lm": "shallow fusion: the paper's LSTM LM (size, training) was not read; no full LM",
        "t3-librispeech-test-clean-lm": "shallow fusion: the paper's LSTM LM (size, training) was not read; no full LM",
        **{
            f"{claim}-lm": "Switchboard shallow fusion: its weight and LM (Switchboard + Fisher text) not read / not built"
            for claim in ("abstract-swb", "abstract-ch", "t4-ss-swb", "t4-ss-ch")
        },
    },
    "nas-fpn": {
        "abstract-amoebanet-ap": "AmoebaNet backbone not built; COCO test-dev is scored by the evaluation server",
        "abstract-mobile-vs-ssdlite-ap": "SSDLite baseline not built; COCO test-dev is scored by the evaluation server",
        "zoo-r50-nasfpn-640-latency-v100": "latency is hardware-bound: its condition 'hardware' is no config key",
    },
    "ulmfit": {
        "t2-*-cove": "CoVe (McCann et al.): another paper's model, not built",
        "t2-imdb-oh-lstm": "oh-LSTM (Johnson and Zhang): another paper's model, not built",
        "t2-imdb-virtual": "virtual adversarial training (Miyato et al.): another paper's model, not built",
        "t2-trec-6-tbcnn": "TBCNN (Mou et al.): another paper's model, not built",
        "t2-trec-6-lstm-cnn": "LSTM-CNN (Zhou et al.): another paper's model, not built",
        "t3-*-char-cnn": "char-level CNN (Zhang et al.): another paper's model, not built",
        "t3-*-cnn": "CNN (Johnson and Zhang 2016): another paper's model, not built",
        "t3-*-dpcnn": "DPCNN (Johnson and Zhang 2017): another paper's model, not built",
        "t5-*-vanilla-lm": "the vanilla LM without dropout: its LM stages (init_from parents) must train without "
        "dropout too, and a --set changes only the classifier's config; no LM config turns the AWD-LSTM's dropouts off",
    },
    "uda": {
        **{
            f"t{table}-*-{method}": "a semi-supervised baseline the paper cites (reported by MixMatch): not built"
            for table in (9, 10)
            for method in ("pseudo-label", "pi-model", "mean-teacher", "vat", "mixmatch")
        },
        **{
            f"t3-*-{method}-*": "a baseline Table 3 cites (Conv-Large, Shake-Shake, WRN-28-2 of other papers): not built"
            for method in (
                "pi-model",
                "mean-teacher",
                "vat-entmin",
                "sntg",
                "ict",
                "pseudo-label",
                "lga-vat",
                "mixmatch",
                "fast-swa",
            )
        },  # fmt: skip
        "t3-*-uda-shake-shake": "Shake-Shake (26M) is not built",
        "t3-*-uda-pyramidnet": "PyramidNet with ShakeDrop is not built",
        "b2-*-mixmatch-reimplementation": "the paper's own MixMatch re-implementation: not built",
        "t4-*-pre-bert-sota": "the best pre-BERT results of other papers: not built",
    },
    "xlnet": {
        "t1-*": "Table 1: XLNet-Large-wikibooks and the best-of-3 BERT-Large: no full-tier config (needs the pre-training)",
        "t2-*": "Table 2: the baselines (GPT, BERT, BERT+DCMN, RoBERTa, DRMM, KNRM, Conv-KNRM) are not built; "
        "ClueWeb09-B has no data module (XLNet-Large's RACE columns: configs/full-race.yaml)",
        "t3-*": "Table 3: the test rows are scored by the SQuAD server (and SQuAD1.1's is an older, unreleased model); "
        "the baselines are not built (XLNet-Large's dev rows: configs/full-squad-v*.yaml)",
        "t4-*": "Table 4: the other papers' models (CNN, DPCNN, Mixed VAT, ULMFiT, BERT) are not built",
        "t5-*": "Table 5: the leaderboard rows are server-scored test sets and ensembles; the baselines are not built",
        "t6-*": "Table 6: XLNet-Base ablations pre-trained on BooksCorpus + Wikipedia: no full-tier config; BERT-Base",
    },
    "elmo": {
        "bilm-perplexity": "needs the biLM's lm1b softmax (not released) or 10 epochs of lm1b training: no config",
        "cnn-big-lstm-perplexity": "Jozefowicz et al.'s CNN-BIG-LSTM, cited for comparison: not built",
        "t1-*-previous-sota": "Table 1's PREVIOUS SOTA column: results of other papers, not built",
        "t1-squad-*": "SQuAD's task model (BiDAF + self-attention) is not built",
        "t1-srl-*": "SRL's task model (He et al.'s deep biLSTM) is not built",
        "t1-coref-*": "coreference's task model (Lee et al.'s end-to-end model) is not built",
        "t2-squad-*": "SQuAD's task model (BiDAF + self-attention) is not built",
        "t2-srl-*": "SRL's task model (He et al.'s deep biLSTM) is not built",
        "t3-squad-*": "SQuAD's task model (BiDAF + self-attention) is not built",
        "t3-srl-*": "SRL's task model (He et al.'s deep biLSTM) is not built",
        "*-ensemble": "ensembles of task models that are not built",
    },
}
PAPERS = sorted(p for p in registry.reproductions() if registry.reproduction(p).runner is None)


def test_known_papers_are_registered() -> None:
    assert set(UNPRODUCIBLE) <= set(PAPERS)


@pytest.mark.parametrize("paper", PAPERS)
def test_every_claim_is_producible_or_explained(paper: str) -> None:
    patterns = UNPRODUCIBLE.get(paper, {})
    claims = registered_claims(paper)
    unexplained = [c.id for c in claims if not producible(c) and not any(fnmatch.fnmatch(c.id, p) for p in patterns)]
    assert unexplained == [], f"{paper}: no run here can judge {unexplained}; build what they need or list the reason"
    unused = [p for p in patterns if not any(fnmatch.fnmatch(c.id, p) and not producible(c) for c in claims)]
    assert unused == [], f"{paper}: these patterns explain no unproducible claim any more: {unused}"
