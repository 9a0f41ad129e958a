"""kbl-client's line for a multi-label model: the predicted labels (and their ids) without the dense reply's
padding, labels and probabilities first."""

import contextlib
import json

import numpy as np

from keras_bert_lite.serving import client_cli


class _MultiLabelClient(contextlib.AbstractContextManager):
    """What a multi-label export's serving_default answers for two texts (numpy, as both clients return it)."""

    def __exit__(self, *exc_info):
        return None

    def predict(self, texts, text_b=None, signature="serving_default"):
        assert len(texts) == 2
        return {
            "labels": np.array([[b"arts", b"sports", b"", b""], [b"", b"", b"", b""]], object),
            "label_ids": np.array([[0, 3, -1, -1], [-1, -1, -1, -1]], np.int32),
            "probabilities": np.array([[0.9, 0.1, 0.2, 0.8], [0.1, 0.2, 0.3, 0.4]], np.float32),
            "logits": np.zeros((2, 4), np.float32),
        }


def test_a_line_holds_the_predicted_labels_without_padding(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(client_cli, "connect", lambda *args: _MultiLabelClient())
    (tmp_path / "texts.txt").write_text("painting and football\nnothing here\n")
    assert client_cli.main(["--model_name", "topics", str(tmp_path / "texts.txt")]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["labels"], r["label_ids"]) for r in lines] == [(["arts", "sports"], [0, 3]), ([], [])]
    assert list(lines[0])[:3] == ["text", "labels", "probabilities"]
    assert lines[0]["probabilities"] == [0.9, 0.1, 0.2, 0.8] and lines[1]["logits"] == [0.0] * 4
