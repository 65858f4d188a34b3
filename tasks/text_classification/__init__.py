"""Text classification: IMDb, Yelp-2, Yelp-5, Amazon-2, Amazon-5, AG News, DBpedia and TREC-6, scored by accuracy
and error.

The benchmarks of ULMFiT (Howard & Ruder, arXiv 1801.06146, Table 2 reports test error), UDA (arXiv
1904.12848), XLNet (arXiv 1906.08237: Amazon-2 and -5 error) and their predecessors, each read in the format its
authors distribute:

- IMDb: Maas et al., "Learning Word Vectors for Sentiment Analysis", ACL 2011 (``aclImdb_v1.tar.gz``):
  ``aclImdb/{train,test}/{neg,pos}/<id>_<rating>.txt``, one review per UTF-8 file, 25,000 per split
  (``train/unsup`` is unlabelled and not read here). Classes: 0 ``neg``, 1 ``pos``.
- Yelp-2 (``yelp_review_polarity_csv``), Yelp-5 (``yelp_review_full_csv``), Amazon-2
  (``amazon_review_polarity_csv``: 3,600,000 train / 400,000 test), Amazon-5 (``amazon_review_full_csv``:
  3,000,000 / 650,000), AG News (``ag_news_csv``) and DBpedia (``dbpedia_csv``): Zhang, Zhao & LeCun,
  "Character-level Convolutional Networks for Text Classification", NIPS 2015 (arXiv 1509.01626). ``train.csv`` /
  ``test.csv`` without a header: the class index from 1 first, then the text fields (Yelp: the review; Amazon:
  title, review; AG News: title, description; DBpedia: title, content), quoted with ``"``, an inner ``"`` doubled,
  new lines written as the two characters ``\\n`` (each dataset's ``readme.txt``). Class index here = the file's
  index - 1; names below in that order (AG News and DBpedia: their ``classes.txt``).
- TREC-6: Li & Roth, "Learning Question Classifiers", COLING 2002 (cogcomp.seas.upenn.edu/Data/QA/QC/):
  ``train_5500.label`` (5,452 questions) and ``TREC_10.label`` (the 500 test questions), one
  ``COARSE:fine question`` line each; the six coarse classes are the labels, here in alphabetical order. The
  files are not all UTF-8 (``train_5500.label`` has a stray byte 0xF0) and are read as latin-1.

Scoring: references ``id,label``, predictions ``id,prediction`` (CSV with a header; ``tasks.imagenet.score``'s
reader, so extra guess columns ``p2..p5`` are accepted and ignored: only ``prediction`` counts). Keys ``accuracy``
and ``error = 100 - accuracy``, percentages. The references may instead be the dataset folder: its test split is
read, with ids as in the data module (IMDb ``<neg|pos>/<file stem>``, the others the 0-based example number) and
labels the 0-based class indices above written as decimal strings.

This module is imported to list the registry: it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.registry import Task

KEYS = ("error", "accuracy")


@dataclass(frozen=True)
class TextLayout:
    """Where a text-classification dataset's files are and what its classes are."""

    task_id: str
    title: str
    format: str  # "imdb", "zhang-csv" or "trec"
    folder: str  # the folder the archive unpacks to; data_root may be it or its parent
    train: str
    test: str
    classes: tuple[str, ...]


LAYOUTS: dict[str, TextLayout] = {
    layout.task_id: layout
    for layout in (
        TextLayout("imdb", "IMDb movie reviews (Maas et al. 2011)", "imdb", "aclImdb", "train", "test", ("neg", "pos")),
        TextLayout(
            "yelp-2",
            "Yelp review polarity (Zhang et al. 2015)",
            "zhang-csv",
            "yelp_review_polarity_csv",
            "train.csv",
            "test.csv",
            ("negative", "positive"),
        ),
        TextLayout(
            "yelp-5",
            "Yelp review full, 1-5 stars (Zhang et al. 2015)",
            "zhang-csv",
            "yelp_review_full_csv",
            "train.csv",
            "test.csv",
            ("1 star", "2 stars", "3 stars", "4 stars", "5 stars"),
        ),
        TextLayout(
            "amazon-2",
            "Amazon review polarity (Zhang et al. 2015)",
            "zhang-csv",
            "amazon_review_polarity_csv",
            "train.csv",
            "test.csv",
            ("negative", "positive"),
        ),
        TextLayout(
            "amazon-5",
            "Amazon review full, 1-5 stars (Zhang et al. 2015)",
            "zhang-csv",
            "amazon_review_full_csv",
            "train.csv",
            "test.csv",
            ("1 star", "2 stars", "3 stars", "4 stars", "5 stars"),
        ),
        TextLayout(
            "ag-news",
            "AG News topics (Zhang et al. 2015)",
            "zhang-csv",
            "ag_news_csv",
            "train.csv",
            "test.csv",
            ("World", "Sports", "Business", "Sci/Tech"),
        ),
        TextLayout(
            "dbpedia",
            "DBpedia ontology classes (Zhang et al. 2015)",
            "zhang-csv",
            "dbpedia_csv",
            "train.csv",
            "test.csv",
            (
                "Company",
                "EducationalInstitution",
                "Artist",
                "Athlete",
                "OfficeHolder",
                "MeanOfTransportation",
                "Building",
                "NaturalPlace",
                "Village",
                "Animal",
                "Plant",
                "Album",
                "Film",
                "WrittenWork",
            ),
        ),
        TextLayout(
            "trec-6",
            "TREC question classification, 6 coarse classes (Li & Roth 2002)",
            "trec",
            "trec",
            "train_5500.label",
            "TREC_10.label",
            ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"),
        ),
    )
}


def _task(task_id: str) -> Task:
    return Task(
        id=task_id,
        title=LAYOUTS[task_id].title,
        score=f"tasks.text_classification.score:score_{task_id.replace('-', '_')}",
        keys=KEYS,
        example="tasks.text_classification.fixtures:example",
        data="tasks.text_classification.data:TextClassificationDataModule",
        metric="tasks.metrics:accuracy_error_metrics",
        version=1,
    )


IMDB = _task("imdb")
YELP_2 = _task("yelp-2")
YELP_5 = _task("yelp-5")
AMAZON_2 = _task("amazon-2")
AMAZON_5 = _task("amazon-5")
AG_NEWS = _task("ag-news")
DBPEDIA = _task("dbpedia")
TREC_6 = _task("trec-6")
