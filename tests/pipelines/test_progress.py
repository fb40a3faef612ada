"""PredictProgress: lines of items done / total over several predict calls, and the last line."""

import logging

from official_bert.pipelines.progress import PredictProgress


def test_lines_count_items_done_over_groups_of_rows(caplog):
    # 5 rows in two predict calls (3 rows in batches of 2, then 2 rows in batches of 2); items done after k rows
    progress = PredictProgress([1, 1, 2, 2, 3, 4], [0, 8, 16, 24, 40, 56], "tagged", "sentences", every_seconds=0)
    with caplog.at_level(logging.INFO, logger="official_bert.pipelines.progress"):
        for rows, batches in ((3, 2), (2, 1)):
            callback = progress.group(rows, batch_size=2)
            for batch in range(batches):
                callback.on_predict_batch_end(batch)
        progress.finish()
    lines = [record.getMessage() for record in caplog.records]
    assert [line.split(",")[0] for line in lines] == ["tagged 2/4 sentences", "tagged 2/4 sentences",
                                                      "tagged 4/4 sentences", "tagged 4/4 sentences"]
    assert "sentences/s" in lines[0] and " left" in lines[0] and " left" not in lines[-1]


def test_no_line_before_its_interval_but_the_last(caplog):
    progress = PredictProgress([0, 1], [0, 8], "tagged", "texts", every_seconds=3600)
    with caplog.at_level(logging.INFO, logger="official_bert.pipelines.progress"):
        progress.group(1, batch_size=8).on_predict_batch_end(0)
        progress.finish()
    assert [record.getMessage().split(",")[0] for record in caplog.records] == ["tagged 1/1 texts"]
