"""The flags of texts longer than `--seq_length`, declared once: `--doc_stride` (kbl-squad's context windows, and
kbl-glue's and kbl-ner's with `--long_documents windows`) and `--long_documents` (`data.long_texts`)."""

from __future__ import annotations

import dataclasses

from keras_bert_lite.data.long_texts import LONG_DOCUMENTS, default_stride, stride_problem
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.finetune import FinetuneJob
from keras_bert_lite.runners.flags import flag


@dataclasses.dataclass
class WindowJob(FinetuneJob):
    """The setting of the commands that read long texts in windows."""

    doc_stride: int | None = flag(
        None,
        "tokens between the starts of a long text's windows (kbl-squad: of a "
        "context; kbl-glue, kbl-ner: with --long_documents windows, by default half a "
        "window)",
        group="long texts",
        type=int,
        minimum=1,
    )


@dataclasses.dataclass
class LongTextJob(WindowJob):
    """The settings of the commands whose texts may be cut or windowed (kbl-glue, kbl-ner)."""

    long_documents: str = flag(
        "truncate",
        "texts longer than --seq_length: truncate (keep their first tokens; the "
        "run says how many texts lost how many tokens) or windows (read them whole: windows "
        "of --seq_length every --doc_stride tokens, trained on each; a text's prediction from "
        "all of its windows)",
        group="long texts",
        choices=LONG_DOCUMENTS,
    )

    def check(self) -> None:
        """Refuses --doc_stride without --long_documents windows, and a stride not smaller than the window (and
        `RunJob.check`'s rules)."""
        super().check()
        if self.doc_stride is not None and self.long_documents != "windows":
            raise SettingsError(
                f"--doc_stride {self.doc_stride} is for --long_documents windows; add that, or drop --doc_stride."
            )
        problem = stride_problem(self.seq_length, self.window_stride(), self.pair_texts()) if self.windowed else ""
        if problem:
            raise SettingsError(problem)

    @property
    def windowed(self) -> bool:
        return self.long_documents == "windows"

    def pair_texts(self) -> bool:
        """Whether the run's examples are text pairs (whose second text is windowed)."""
        return False

    def window_stride(self) -> int:
        """The stride of the windows: --doc_stride, or half the window; 0 when texts are truncated."""
        if not self.windowed:
            return 0
        return self.doc_stride or default_stride(self.seq_length, self.pair_texts())
