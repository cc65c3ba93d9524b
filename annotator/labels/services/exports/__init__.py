"""Exports of a campaign's verified labels: ECCV Caption JSON, JSONL, CSV, Crisscrossed CSV, a Postgres table.

`write.labels_write` is the one entry for files, with one writer module per format (eccv, jsonl, labels_csv, cxc);
`jobs` records and runs export jobs; `postgres` pipes COPY to COPY into a researcher's database.

Every writer streams, so memory does not grow with the number of labels: rows come from server-side
cursors in chunks and are written as they arrive, grouped in SQL order (`annotator.core.bulk`).
"""
