"""Reading the real data sets of the ``online`` family from CSV (CitiBike trips, sepsis admissions), and writing
small generated files in the same layout for the tests and the tiny configurations."""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Sequence

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable

MISSING = ("", "\\N", "NA", "NaN", "nan")  # cells read as missing (CitiBike writes \N for an unknown birth year)


def locate(context: Context, loader: str, folder: str, file: str, root: str | None) -> Path:
    """``root/<file>`` or ``DATA_DIR/<folder>/<file>``; DataUnavailable when neither is given or the file is absent."""
    base = Path(root) if root else (Path(context.data_dir) / folder if context.data_dir else None)
    if base is None:
        raise DataUnavailable(f"{loader}: no --data-dir given; it reads DATA_DIR/{folder}/{file}")
    path = base / file
    if not path.is_file():
        raise DataUnavailable(f"{loader}: {path} is not there (expected a CSV with a header row)")
    return path


def read_columns(path: Path, columns: Sequence[str], *, loader: str) -> tuple[dict[str, np.ndarray], int]:
    """The named columns of a CSV with a header row, as float arrays, and the number of rows dropped because one
    of those cells was missing (one of :data:`MISSING`). A named column absent from the header, a row with the
    wrong number of cells, or a cell that is neither missing nor a finite number raises DataError naming the
    file, the line and the column."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise DataError(f"{loader}: {path} is empty; expected a header row, then one row per record") from None
        absent = [c for c in columns if c not in header]
        if absent:
            raise DataError(f"{loader}: {path}: column(s) {', '.join(map(repr, absent))} not in the header "
                            f"({', '.join(header)})")
        where = [header.index(c) for c in columns]
        values: list[list[float]] = []
        dropped = 0
        for line, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise DataError(f"{loader}: {path}:{line}: {len(row)} cells; the header has {len(header)}")
            cells = [row[i].strip() for i in where]
            if any(cell in MISSING for cell in cells):
                dropped += 1
                continue
            parsed = []
            for name, cell in zip(columns, cells):
                try:
                    value = float(cell)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value):
                    raise DataError(f"{loader}: {path}:{line}: column {name!r} holds {cell!r}, not a finite number "
                                    "(encode categories as numbers first)")
                parsed.append(value)
            values.append(parsed)
    table = np.asarray(values, dtype=float).reshape(-1, len(columns))
    return {name: table[:, i] for i, name in enumerate(columns)}, dropped


def write_csv(path: Path, header: Sequence[str], rows: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(header))
        writer.writerows(np.asarray(rows).tolist())
    return path


def write_citibike_like(path: Path, rows: int, *, seed: int = 0) -> Path:
    """A generated CSV in the CitiBike layout the ``ski-csv`` loader reads: ``tripduration`` (seconds) and numeric
    features (``birth year``, ``gender``, ``start hour``, ``start station latitude``, ``start station longitude``);
    durations depend on the features, so a predictor has something to learn."""
    rng = np.random.default_rng(seed)
    birth = rng.integers(1940, 2000, rows)
    gender = rng.integers(0, 3, rows)
    hour = rng.integers(0, 24, rows)
    lat = np.round(40.70 + 0.1 * rng.random(rows), 3)
    lon = np.round(-74.02 + 0.1 * rng.random(rows), 3)
    log_mean = 6.3 + 0.01 * (birth - 1970) + 0.2 * (gender == 0) + 3.0 * (lat - 40.75)
    duration = np.round(np.exp(log_mean + 0.6 * rng.standard_normal(rows))).astype(int) + 1
    return write_csv(path, ["tripduration", "birth year", "gender", "start hour", "start station latitude",
                            "start station longitude"], np.column_stack([duration, birth, gender, hour, lat, lon]))


SEPSIS_COLUMNS = ("age_years", "sex_0male_1female", "episode_number", "hospital_outcome_1alive_0dead")


def write_sepsis_like(path: Path, rows: int, *, seed: int = 0) -> Path:
    """A generated CSV in the layout of the UCI sepsis survival records (primary cohort): age, sex, episode number
    and the hospital outcome (1 alive, 0 dead), with mortality rising with age."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 100, rows)
    sex = rng.integers(0, 2, rows)
    episode = rng.integers(1, 6, rows)
    death = rng.random(rows) < 1 / (1 + np.exp(-(-4.5 + 0.05 * age + 0.2 * episode)))
    return write_csv(path, list(SEPSIS_COLUMNS), np.column_stack([age, sex, episode, (~death).astype(int)]))
