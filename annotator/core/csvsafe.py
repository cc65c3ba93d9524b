"""The one CSV writer of every export: no cell that a spreadsheet would evaluate as a formula (CSV injection).

Excel, LibreOffice and Google Sheets read a cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage
return as a formula (`=HYPERLINK(...)`, `@SUM(...)`, `-2+3`). Ids, captions, user and evaluation names come
from other people (a requester's dataset, a worker's user name), so every CSV export writes through
`csv_writer`, which prefixes such a cell with a single quote, as OWASP recommends: the spreadsheet shows
the text and evaluates nothing. A line feed is added to the list: a cell that starts on a new line is the
same trick as a carriage return. A line break inside a cell is always quoted (SafeCsvWriter), so it
cannot start a row of its own.

Exempt, and written exactly as given:
- numbers: an int or a float, and text that is a plain decimal number (`-0.5`, `-12`, `+3`, `1e-05`). A
  spreadsheet reads these as numbers, not formulas, and quoting them would turn a numeric column (a
  negative score, a leaderboard delta, the label-set CSV's integer ids, which may be negative) into text;
- empty cells and cells that begin with anything else (the Crisscrossed Captions files: their ids are
  `COCO_val2014_000000365325.jpg` and `COCO_val2014:sentid:732091`, their scores plain numbers, their
  sampling methods words, so a released file is exported again line for line, with no exemption needed).
Text like `-inf` or `-1+2` is not a plain number and is quoted.

Reading back: a neutralised cell keeps its quote (`'=HYPERLINK(...)`); only a hostile id changes.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import IO, Any

FORMULA_STARTS = frozenset("=+-@\t\r\n")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def csv_cell(value: Any) -> Any:
    """`value` as a cell no spreadsheet evaluates: text starting with FORMULA_STARTS gets a leading `'`,
    unless it is a plain number; numbers, None and everything else are returned unchanged."""
    if not isinstance(value, str) or value[:1] not in FORMULA_STARTS or _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value


class SafeCsvWriter:
    """`csv.writer` with every cell passed through csv_cell, and every cell holding a line break quoted.

    csv.writer quotes a cell only for the characters of its own line terminator: with `lineterminator="\n"`
    a carriage return inside a caption is written bare, and a spreadsheet starts a new row there, whose
    first cell (`a dog\r=HYPERLINK(...)`) it evaluates. So a row with such a cell is formatted with "\r\n"
    (which quotes both) and ends with the terminator asked for.
    """

    def __init__(self, out: IO[str], **options):
        self._out = out
        self._terminator = options.pop("lineterminator", "\r\n")
        self._writer = csv.writer(out, lineterminator=self._terminator, **options)
        self._bare = "\r" not in self._terminator or "\n" not in self._terminator  # a break it would not quote
        self._buffer = io.StringIO()
        self._quoting = csv.writer(self._buffer, lineterminator="\r\n", **options)

    def writerow(self, row: Iterable[Any]) -> int:
        cells = [csv_cell(value) for value in row]
        if not (self._bare and any(isinstance(c, str) and ("\r" in c or "\n" in c) for c in cells)):
            return self._writer.writerow(cells)
        self._quoting.writerow(cells)
        line = self._buffer.getvalue()[:-2] + self._terminator
        self._buffer.seek(0)
        self._buffer.truncate()
        return self._out.write(line)

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(out: IO[str], **options) -> SafeCsvWriter:
    """The writer every CSV export uses; `options` are csv.writer's (dialect, lineterminator, ...)."""
    return SafeCsvWriter(out, **options)
