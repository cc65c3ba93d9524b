"""Label sets (annotator.labels.models.labelsets): the writes, one module per verb.

- `evaluation.py`: `evaluate(label_set=..., rankings=..., model_name="")` (= `labelset_evaluate`), ECCV
  Caption's R@1/5/10, R-Precision and mAP@R of a model's rankings over exactly the set's judged queries,
  with warnings; `rankings_read(raw=...)` reads a rankings file;
- `readers.py` (the released file formats) and `imports.py` (`labelset_import`);
- `builds.py`: `labelset_from_campaign`, `labelset_from_original`, `labelset_derive`;
- `store.py`: `labelset_store`, the one place a set is written (next version, bulk rows);
- `exports.py`: `labelset_export_chunks`;
- `rankings.py`: bring your own ranking (`ranking_run_upload`, `labelset_unjudged_campaign`,
  `labelset_merge_campaign`).
"""
