"""The ``geodp`` command line."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line imports NumPy and the library only when a command runs,
    # so that 'geodp --help' stays fast (tests/test_cli_text.py checks what it imports)
    import numpy as np

    from .manifolds import Manifold


def _to_json(x):
    import numpy as np
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    raise TypeError(f"cannot serialise {type(x).__name__}")


def _finite_or_null(x):
    """NaN and infinities as null: strict JSON has no literal for them."""
    import numpy as np
    if isinstance(x, dict):
        return {k: _finite_or_null(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite_or_null(v) for v in x]
    if isinstance(x, np.ndarray):
        return _finite_or_null(x.tolist())
    if isinstance(x, (float, np.floating)) and not np.isfinite(x):
        return None
    return x


def emit(payload: dict, fmt: str = "json") -> None:
    """Print a JSON object on standard output (strict JSON: NaN and infinities become null), or
    with ``fmt="text"`` the same content for people (``render_text``)."""
    if fmt == "text":
        print(render_text(payload), end="")
        return
    print(json.dumps(_finite_or_null(payload), indent=2, default=_to_json, allow_nan=False))


def _number(x) -> str:
    import numpy as np
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.6g}"


def _matrix_lines(a: np.ndarray) -> list[str]:
    """An array as aligned text: a vector on one line, a matrix one row a line with its columns
    right-aligned, higher ranks as their matrices one after the other."""
    if a.ndim == 0:
        return [_number(a.item())]
    if a.ndim == 1:
        return ["[" + "  ".join(_number(v) for v in a) + "]"]
    if a.ndim > 2:
        lines = []
        for i, sub in enumerate(a):
            lines += [f"[{i}]"] + ["  " + line for line in _matrix_lines(sub)]
        return lines
    cells = [[_number(v) for v in row] for row in a]
    width = max((len(c) for row in cells for c in row), default=0)
    return ["[" + "  ".join(c.rjust(width) for c in row) + "]" for row in cells]


def _numeric_array(x) -> np.ndarray | None:
    import numpy as np
    if isinstance(x, np.ndarray) or (isinstance(x, list) and x):
        try:
            a = np.asarray(x)
        except ValueError:
            return None
        if a.dtype.kind in "biuf" and a.ndim >= 1:
            return a
    return None


def _text_lines(key: str, value, indent: int = 0) -> list[str]:
    import numpy as np
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [f"{pad}{key}: (none)"]
        lines = [f"{pad}{key}:"]
        for k, v in value.items():
            lines += _text_lines(str(k), v, indent + 2)
        return lines
    a = _numeric_array(value)
    if a is not None:
        rows = _matrix_lines(a)
        if len(rows) == 1:
            return [f"{pad}{key}: {rows[0]}"]
        return [f"{pad}{key}:"] + [f"{pad}  {row}" for row in rows]
    if isinstance(value, (list, tuple)):
        if not value:
            return [f"{pad}{key}: (none)"]
        lines = [f"{pad}{key}:"]
        for v in value:
            if isinstance(v, dict) and v:  # one item's fields under its dash, aligned
                item = [line for k, w in v.items() for line in _text_lines(str(k), w, indent + 4)]
                lines += [f"{pad}  - {item[0][indent + 4:]}"] + item[1:]
            else:
                lines.append(f"{pad}  - {v}")
        return lines
    if value is None:
        return [f"{pad}{key}: (none)"]
    if isinstance(value, (bool, int, float, np.generic)):
        return [f"{pad}{key}: {_number(value)}"]
    return [f"{pad}{key}: {value}"]


def render_text(payload: dict) -> str:
    """A release (or any payload) for people: the value first (a matrix as aligned rows), then
    the guarantee statement, the public parameters, the rest of the public output, and the
    non-private diagnostics last under a heading that says so."""
    payload = dict(payload)
    diagnostics = payload.pop("diagnostics_not_private", None)
    lines: list[str] = []
    if "value" in payload:
        lines += _text_lines("value", payload.pop("value"))
    if "statement" in payload:
        lines.append(f"guarantee: {payload.pop('statement')}")
        payload.pop("guarantee", None)
    if "parameters" in payload:
        lines += _text_lines("public parameters", payload.pop("parameters"))
    for k, v in payload.items():
        lines += _text_lines(k, v)
    if diagnostics is not None:
        diagnostics = dict(diagnostics)
        note = diagnostics.pop("note", "")
        lines += ["", "diagnostics_not_private:"] + ([f"  note: {note}"] if note else [])
        for k, v in diagnostics.items():
            lines += _text_lines(k, v, 2)
    return "\n".join(lines) + "\n"


def read_points(source: str, manifold: Manifold | None, chunked: bool = False
                ) -> tuple[np.ndarray, Manifold]:
    """Points from a built-in data set name, or from a .npy / .csv file with a manifold given;
    ``chunked``: a lazy dask array from a .npy file, a directory of them or a Zarr array
    (``geodp.datasets.open_chunked``).

    One record is one point, never reshaped across rows: a CSV file has one point per row, its
    ``prod(point_shape)`` values in row-major order; a .npy array has shape (n, *point_shape).
    Anything else is refused with the shapes found and expected (a record split over two
    "points" would void the stated guarantee). A float32 array keeps its dtype, so that
    ``Manifold.check_point`` judges it at its own precision.
    """
    from . import datasets
    not_chunked = ("error: --scheduler and --workers read chunked inputs: a .npy file, a "
                   "directory of .npy files or a Zarr array")
    if source in datasets.names():
        if chunked:
            raise SystemExit(not_chunked)
        ds = datasets.load(source)
        if manifold is not None and repr(manifold) != repr(ds.manifold):
            raise SystemExit(f"error: data set {source!r} lives on {ds.manifold!r}, not {manifold!r}")
        return ds.points, ds.manifold
    path = Path(source)
    if not path.exists():
        raise SystemExit(f"error: {source!r} is neither a file nor a built-in data set "
                         f"({', '.join(datasets.names())})")
    if manifold is None:
        raise SystemExit("error: --manifold is required when reading points from a file")
    if chunked:
        return _read_chunked(source, manifold), manifold
    if path.is_dir():
        raise SystemExit(f"error: {source!r} is a directory; give a .npy or .csv file (a directory "
                         f"of .npy files is read chunked, with --workers or --scheduler)")
    if path.suffix == ".npy":
        x = _read_npy(source, manifold.point_shape)
    elif path.suffix == ".csv":
        x = _read_csv(source, manifold)
    else:
        raise SystemExit(f"error: unsupported file type {path.suffix!r}: use .npy or .csv")
    _refuse_non_finite(source, x, path.suffix == ".csv")
    return x, manifold


def _read_chunked(source: str, manifold: Manifold):
    """A lazy dask array of the records at ``source`` (see ``read_points``)."""
    from . import datasets
    shape = manifold.point_shape
    if Path(source).suffix == ".csv":
        raise SystemExit("error: --scheduler and --workers read chunked inputs: a .npy file, a "
                         "directory of .npy files or a Zarr array")
    try:
        points = datasets.open_chunked(source)
    except ImportError:
        raise SystemExit("error: --scheduler and --workers need Dask, which is not installed: "
                         "pip install 'geodp[dask]'") from None
    if points.ndim != len(shape) + 1 or points.shape[1:] != shape:
        raise SystemExit(f"error: {source!r} holds records of shape {points.shape[1:]}; "
                         f"{manifold!r} needs {shape}: one point per record")
    return points


def load_npy(source: str, mmap_mode: str | None = None) -> np.ndarray:
    """``numpy.load`` of a .npy file without pickles; a one-line error for an empty or unreadable
    file."""
    import numpy as np
    try:
        return np.load(source, mmap_mode=mmap_mode, allow_pickle=False)
    except EOFError:
        raise SystemExit(f"error: {source!r} is empty (zero bytes): not a .npy array") from None
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: cannot read {source!r} as a .npy array: {exc}") from None


def _read_npy(source: str, shape: tuple[int, ...]) -> np.ndarray:
    """The (n, *shape) array of a .npy file, float64 or float32 (kept, see ``read_points``)."""
    import numpy as np
    x = load_npy(source)
    if x.shape[1:] != shape or x.ndim != len(shape) + 1:
        raise SystemExit(f"error: {source!r} holds an array of shape {x.shape}; the manifold "
                         f"needs (n, {', '.join(map(str, shape))}): one point per record")
    if not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise SystemExit(f"error: {source!r} holds {x.dtype} values; points are real numbers")
    return x if x.dtype == np.float32 else np.asarray(x, dtype=float)


def csv_rows(source: str) -> list[list[str]]:
    """The non-blank rows of a CSV file as lists of fields: a UTF-8 byte-order mark is dropped and
    quoted fields ("0.5") are unquoted."""
    try:
        text = Path(source).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise SystemExit(f"error: {source!r} is not a UTF-8 text file") from None
    return [[f.strip() for f in row] for row in csv.reader(text.splitlines())
            if any(f.strip() for f in row)]


def _read_csv(source: str, manifold: Manifold) -> np.ndarray:
    """The records of a CSV file, one point per row (see ``read_points``)."""
    import numpy as np
    shape = manifold.point_shape
    size = int(np.prod(shape))
    rows = csv_rows(source)
    if not rows:
        raise SystemExit(f"error: {source!r} is empty")
    values = []
    for fields in rows:  # the first row's width is the file's (its schema); no other row is named
        if len(fields) != size:
            found = (f"has rows of {len(fields)} comma-separated values" if fields is rows[0] else
                     f"has a row without {size} comma-separated values")
            raise SystemExit(f"error: {source!r} {found}; {manifold!r} needs {size} per row (one "
                             f"point of shape {shape} per row)")
        try:
            values.append([float(v) for v in fields])
        except ValueError:
            raise SystemExit(f"error: {source!r} has a row that is not numeric; a header line is "
                             f"not allowed") from None
    return np.array(values).reshape((-1,) + shape)


def _refuse_non_finite(source: str, x: np.ndarray, csv_file: bool) -> None:
    """Refuse records holding a NaN or an infinity, saying neither which nor how many (a
    position of a record is a statistic of the data, and this error is printed)."""
    import numpy as np
    if not np.all(np.isfinite(x)):
        rows = "rows" if csv_file else "records"
        raise SystemExit(f"error: {source!r}: one or more {rows} contain NaN or infinite values; "
                         f"remove or repair them (numpy.isfinite finds them)")


def _manifold_arg(spec: str | None) -> Manifold | None:
    from .manifolds.spec import manifold_from_spec
    if spec is None:
        return None
    try:
        return manifold_from_spec(spec)
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc


def _distributed(args: argparse.Namespace) -> bool:
    if args.scheduler is not None and args.workers is not None:
        raise SystemExit("error: give --scheduler (a running cluster) or --workers (a local one), "
                         "not both")
    if args.workers is not None and args.workers < 1:
        raise SystemExit(f"error: --workers must be a positive integer, got {args.workers}")
    return args.scheduler is not None or args.workers is not None


@contextmanager
def dask_cluster(args: argparse.Namespace) -> Iterator[None]:
    """A dask.distributed client for the call: connected to ``--scheduler``, or to a LocalCluster
    of ``--workers`` processes (one thread each) started and stopped with the call."""
    if not _distributed(args):
        yield
        return
    try:
        from distributed import Client
    except ImportError:
        raise SystemExit("error: --scheduler and --workers need dask.distributed: "
                         "pip install 'geodp[dask]'") from None
    if args.scheduler is not None:
        try:
            client = Client(args.scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise SystemExit(f"error: cannot reach the Dask scheduler at --scheduler "
                             f"{args.scheduler!r}: {exc}") from None
        with client:
            yield
        return
    from .chunked import local_cluster

    with local_cluster(args.workers) as cluster, Client(cluster):
        yield


def cmd_mean(args: argparse.Namespace) -> None:
    from .statistics import frechet_mean

    points, manifold = read_points(args.data, _manifold_arg(args.manifold), _distributed(args))
    with warnings.catch_warnings(record=True) as caught, dask_cluster(args):
        warnings.simplefilter("always")
        res = frechet_mean(manifold, points, tol=args.tol, max_iter=args.max_iter)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    emit({"warnings": [str(w.message) for w in caught], "manifold": repr(manifold),
          "n": int(points.shape[0]), "value": res.mean, "iterations": res.iterations,
          "converged": res.converged,
          "grad_norm": float(res.grad_norm),
          "max_radius": None if res.max_radius is None else float(res.max_radius)}, args.format)


def cmd_datasets(args: argparse.Namespace) -> None:
    from . import datasets
    rows = []
    for name in datasets.names():
        ds = datasets.load(name)
        rows.append({"name": name, "manifold": repr(ds.manifold), "n": len(ds.points),
                     "public_ball": ds.has_public_ball,
                     "description": ds.description, "source": ds.source})
    emit({"datasets": rows}, args.format)


def read_center(spec: str, manifold: Manifold, option: str = "--center") -> np.ndarray:
    """A public point: 'identity' (SPD), a comma list or JSON array, or a .npy file; checked to lie
    on the manifold, errors naming the command-line ``option``."""
    import numpy as np
    shape = manifold.point_shape
    if spec == "identity":
        if len(shape) != 2 or shape[0] != shape[1]:
            raise SystemExit(f"error: {option} identity only makes sense for SPD matrices")
        point = np.eye(shape[0])
    elif spec.endswith(".npy"):
        try:
            point = np.load(spec, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise SystemExit(f"error: cannot read {option} {spec!r}: {exc}") from None
    else:
        try:
            values = json.loads(spec) if spec.lstrip().startswith("[") else [
                float(v) for v in spec.split(",")]
            point = np.asarray(values, dtype=float)
        except (json.JSONDecodeError, ValueError):
            raise SystemExit(f"error: cannot read {option} {spec!r}: give 'identity', numbers "
                             f"separated by commas, a JSON array of shape {shape} or a .npy "
                             f"file") from None
    if point.size != int(np.prod(shape)):
        raise SystemExit(f"error: {option} has {point.size} values; {manifold!r} needs "
                         f"{int(np.prod(shape))} (shape {shape})")
    point = point.reshape(shape)
    try:
        return manifold.check_point(point)
    except ValueError as exc:
        raise SystemExit(f"error: {option} is not a point of {manifold!r}: {exc}") from None


def public_ball(args: argparse.Namespace, manifold: Manifold) -> tuple[np.ndarray, float, str]:
    """The (center, radius) of the release: from the options, or a built-in data set's bound."""
    from . import datasets
    if args.center is not None and args.radius is not None:
        return read_center(args.center, manifold), args.radius, "given"
    why = ""
    if args.data in datasets.names() and args.center is None and args.radius is None:
        ds = datasets.load(args.data)
        if ds.has_public_ball:
            center, radius = ds.public_ball()
            return center, radius, f"public bound shipped with data set {args.data!r}"
        why = f" (data set {args.data!r} ships none: {ds.no_public_ball})"
    raise SystemExit(f"--center and --radius are required: the public ball containing every "
                     f"possible record (it must not be computed from the data){why}")


def open_ledger(path: str | None):
    """The budget ledger named by --ledger (None without one); a clear error when it is missing."""
    from .privacy import BudgetLedger

    if path is None:
        return None
    if not Path(path).exists():
        raise SystemExit(f"error: no ledger at {path}; create it with 'geodp budget init "
                         f"--ledger {path} --epsilon E'")
    return BudgetLedger(path)


#: Python keywords whose command-line flag is not their own name (``--epsilon`` and ``--delta``
#: of ``geodp budget init`` are the ledger's ``total_epsilon`` and ``total_delta``).
FLAGS = {"rng": "--seed", "total_epsilon": "--epsilon", "total_delta": "--delta",
         "n_samples": "--samples", "rdp": "--rdp-alpha with --rdp-epsilon"}


def flag(keyword: str) -> str:
    """The command-line flag of a Python keyword: ``clip_data=True`` -> ``--clip-data``,
    ``x_range`` -> ``--x-range``, ``rng`` -> ``--seed``."""
    return FLAGS.get(keyword, "--" + keyword.removesuffix("=True").replace("_", "-"))


def command_spelling(parser: argparse.ArgumentParser, argv: list[str]):
    """How the subcommand that ``argv`` runs spells a Python keyword in its errors: as its flag
    where the subcommand has that flag, as the keyword itself otherwise (a parameter the
    library sets, such as a mechanism's noise ``scale``, has no flag to name)."""
    for token in argv:  # down the subcommands named in argv (geodp release mean ...)
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and token in subs[0].choices:
            parser = subs[0].choices[token]
    flags = {s for action in parser._actions for s in action.option_strings}
    return lambda keyword: flag(keyword) if flag(keyword).split()[0] in flags else keyword


@contextmanager
def flag_spelling() -> Iterator[None]:
    """Refusals name the command-line flags (--allow-approximate, --clip-data, --x-range), not
    the Python keywords: the refusals that name options re-spell themselves (``spelled``)."""
    from .learn import RecordsOutsideBound
    from .mechanisms import ApproximateSamplerRefused

    try:
        yield
    except ApproximateSamplerRefused as exc:
        raise exc.spelled(flag("allow_approximate=True")) from None
    except RecordsOutsideBound as exc:
        raise exc.spelled(flag) from None


class Caught(list):
    """The warnings of a release as text: the public ones (classes marked ``public``: raised from
    public parameters or released values), and in ``diagnostic`` all others, whose raising or
    text may depend on the data without noise (geodp's diagnostics, NumPy's floating-point
    warnings, a manifold's precision warning on the records)."""

    def __init__(self) -> None:
        super().__init__()
        self.diagnostic: list[str] = []


@contextmanager
def spelled_warnings(show_diagnostics: bool = False) -> Iterator[Caught]:
    """Warnings raised in the block, collected as text (options as flags) and printed on stderr
    as ``warning: ...``; a warning not marked ``public`` (it may depend on the data without
    noise) is printed and published only with ``show_diagnostics`` (--diagnostics)."""
    from .parameters import Spelled

    caught = Caught()
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        yield caught
    for w in records:
        message = w.message.spelled(flag) if isinstance(w.message, Spelled) else w.message
        if not getattr(w.message, "public", False):
            caught.diagnostic.append(str(message))
            if not show_diagnostics:
                continue
        else:
            caught.append(str(message))
        print(f"warning: {message}", file=sys.stderr)


def published(rel, caught: Caught, args: argparse.Namespace, ledger) -> dict:
    """A release's output: the public warnings caught (``spelled_warnings``), the release with
    its caveats spelled as flags, with --diagnostics its diagnostics and the diagnostic warnings,
    and the ledger's remaining budget."""
    rel = replace(rel, caveats=tuple(c.spelled(flag) for c in rel.caveats))
    out = {"warnings": list(caught), **rel.as_dict(diagnostics=args.diagnostics),
           **ledger_remaining(ledger)}
    if args.diagnostics:
        out["diagnostics_not_private"]["warnings"] = caught.diagnostic
    return out


def ledger_remaining(ledger) -> dict:
    """The ledger's remaining budget after a release, for its JSON output ({} without one)."""
    if ledger is None:
        return {}
    eps, delta = ledger.spent()
    return {"ledger": {"remaining_epsilon": ledger.total_epsilon - eps,
                       "remaining_delta": ledger.total_delta - delta}}


def max_condition_arg(value: str | None, source: str) -> float | None:
    """``--max-condition``: a number, or 'public' for the cap a built-in data set ships
    (``Dataset.max_condition``); None when not given."""
    from . import datasets
    if value is None:
        return None
    if value != "public":
        try:
            return float(value)
        except ValueError:
            raise SystemExit(f"error: --max-condition must be a number or 'public', got "
                             f"{value!r}") from None
    k = datasets.load(source).max_condition if source in datasets.names() else None
    if k is None:
        raise SystemExit(f"error: --max-condition public needs a built-in data set that ships a "
                         f"condition cap ({', '.join(n for n in datasets.names() if datasets.load(n).max_condition)}); "
                         f"otherwise give a number")
    return k


def cmd_release_mean(args: argparse.Namespace) -> None:
    from .learn import private_frechet_mean
    from .learn.frechet import unused_options

    points, manifold = read_points(args.data, _manifold_arg(args.manifold), _distributed(args))
    center, radius, origin = public_ball(args, manifold)
    ledger = open_ledger(args.ledger)
    footpoint = args.footpoint
    if footpoint is not None and footpoint != "private":
        footpoint = read_center(footpoint, manifold, "--footpoint")
    if (args.rdp_alpha is None) != (args.rdp_epsilon is None):
        raise SystemExit("--rdp-alpha and --rdp-epsilon go together")
    rdp = None if args.rdp_alpha is None else (args.rdp_alpha, args.rdp_epsilon)
    cap = max_condition_arg(args.max_condition, args.data)
    given = {k: v for k, v in (("footpoint_budget", args.footpoint_budget), ("steps", args.steps),
                               ("lr", args.lr), ("max_condition", cap)) if v is not None}
    flags = {"allow_approximate"} if args.allow_approximate else set()
    refusal = unused_options(args.mechanism, set(given) | flags, footpoint)
    if refusal is not None:
        raise refusal
    with dask_cluster(args), flag_spelling(), spelled_warnings(args.diagnostics) as caught:
        rel = private_frechet_mean(manifold, points, args.epsilon, center, radius,
                                   mechanism=args.mechanism, clip_data=args.clip_data, ledger=ledger,
                                   rng=args.seed, restrict=args.restrict, delta=args.delta,
                                   mu=args.mu, rdp=rdp, footpoint=footpoint,
                                   tangent_sensitivity=args.tangent_sensitivity,
                                   allow_approximate=args.allow_approximate, secure=args.secure,
                                   **given)
    emit({"manifold": repr(manifold), "data": args.data, "radius": radius, "ball": origin,
          **published(rel, caught, args, ledger)}, args.format)


def read_regression(source: str, manifold: Manifold | None) -> tuple[np.ndarray, np.ndarray, Manifold,
                                                                      tuple[float, float] | None]:
    """Covariates, responses, manifold and the data set's public covariate range (None for
    files): a built-in data set with a covariate, an .npz file with arrays ``x`` (n,) and ``y``
    (n, *point_shape), or a CSV whose first column is the covariate and the rest one point."""
    from . import datasets
    import numpy as np
    if source in datasets.names():
        ds = datasets.load(source)
        if ds.covariates is None:
            with_cov = [n for n in datasets.names() if datasets.load(n).covariates is not None]
            raise SystemExit(f"error: data set {source!r} has no covariate; regression data sets: "
                             f"{', '.join(with_cov)}")
        points, manifold = read_points(source, manifold)
        return ds.covariates, points, manifold, ds.covariate_range
    path = Path(source)
    if manifold is None:
        raise SystemExit("error: --manifold is required when reading a regression file")
    if path.suffix == ".npz":
        try:
            arrays = np.load(path, allow_pickle=False)
            x, y = np.asarray(arrays["x"], dtype=float), np.asarray(arrays["y"], dtype=float)
        except (OSError, ValueError, KeyError) as exc:
            raise SystemExit(f"error: cannot read arrays 'x' and 'y' from {source!r}: {exc}") from None
        if y.shape[1:] != manifold.point_shape or x.shape != y.shape[:1]:
            shape = ", ".join(map(str, manifold.point_shape))
            raise SystemExit(f"error: {source!r} holds x of shape {x.shape} and y of shape {y.shape}; "
                             f"{manifold!r} needs x (n,) and y (n, {shape})")
        return x, y, manifold, None
    if path.suffix != ".csv":
        raise SystemExit("error: regression data come from a built-in data set, an .npz file "
                         "(arrays x and y) or a .csv file (covariate, then the point's values)")
    size = int(np.prod(manifold.point_shape))
    rows = np.atleast_2d(np.asarray(read_points(source, _csv_width(size + 1))[0]))
    return rows[:, 0], rows[:, 1:].reshape((-1,) + manifold.point_shape), manifold, None


def _csv_width(width: int) -> Manifold:
    from .manifolds import Euclidean
    return Euclidean(width)


def cmd_release_regression(args: argparse.Namespace) -> None:
    from .learn import private_geodesic_regression
    from .learn.regression import unused_regression_options

    x, y, manifold, shipped_range = read_regression(args.data, _manifold_arg(args.manifold))
    x_range = tuple(args.x_range) if args.x_range is not None else shipped_range
    if x_range is None:
        raise SystemExit("--x-range LO HI is required: a public range of the covariate (not "
                         "computed from the data)")
    center = None if args.center is None else read_center(args.center, manifold)
    refusal = unused_regression_options(args.release, {"footpoint_budget"}
                                        if args.footpoint_budget is not None else set())
    if refusal is not None:
        raise refusal
    ledger = open_ledger(args.ledger)
    with flag_spelling(), spelled_warnings(args.diagnostics) as caught:
        rel = private_geodesic_regression(manifold, x, y, args.epsilon, args.tau, x_range, args.v_max,
                                          center=center, radius=args.radius, rng=args.seed,
                                          release=args.release, clip_data=args.clip_data, ledger=ledger,
                                          footpoint_budget=(0.5 if args.footpoint_budget is None
                                                            else args.footpoint_budget),
                                          max_steps=args.max_steps,
                                          allow_approximate=args.allow_approximate)
    emit({"manifold": repr(manifold), "data": args.data, "n": len(x),
          **published(rel, caught, args, ledger)}, args.format)


PCA_SPACES = ("sphere:{last} (the leading eigenvector) or grassmann:{d}xK (the top-K principal "
              "subspace, 1 <= K < {d})")


def _row_length(source: str) -> int:
    """The length of a file's rows, from a .npy header or a CSV's first line (``read_points``
    then checks every row, and names a missing file or another type)."""
    path = Path(source)
    if path.suffix == ".npy" and path.is_file():
        shape = load_npy(source, mmap_mode="r").shape
        if len(shape) != 2:
            raise SystemExit(f"error: PCA needs vectors: {source!r} holds an array of shape "
                             f"{shape}, not one vector per row")
        return shape[1]
    if path.suffix == ".csv" and path.is_file():
        return len(next(iter(csv_rows(source)), [""]))
    return 1


def pca_vectors(source: str) -> np.ndarray:
    """The rows z_i (n, D) of a built-in data set of vectors or of a .npy / .csv file."""
    from . import datasets
    from .manifolds import Euclidean

    if source in datasets.names():
        points, _ = read_points(source, None)
    else:
        points, _ = read_points(source, Euclidean(_row_length(source)))
    if points.ndim != 2:
        raise SystemExit(f"error: PCA needs vectors: {source!r} holds points of shape "
                         f"{points.shape[1:]}")
    return points


def cmd_release_pca(args: argparse.Namespace) -> None:
    from .manifolds.spec import manifold_from_spec
    from .learn import private_pca, private_principal_subspace

    points = pca_vectors(args.data)
    d = points.shape[1]
    manifold = _manifold_arg(args.manifold or f"sphere:{d - 1}")
    shape = manifold.point_shape
    expected = [f"sphere:{d - 1}"] + ([f"grassmann:{d}x{shape[1]}"]
                                      if len(shape) == 2 and shape[0] == d else [])
    if repr(manifold) not in (repr(manifold_from_spec(e)) for e in expected):
        raise SystemExit(f"error: --manifold {args.manifold} does not match {args.data!r}, whose "
                         f"rows have length {d}: pass --manifold "
                         f"{PCA_SPACES.format(last=d - 1, d=d)}")
    estimator = private_pca if len(shape) == 1 else private_principal_subspace
    ledger = open_ledger(args.ledger)
    with flag_spelling(), spelled_warnings(args.diagnostics) as caught:
        rel = estimator(manifold, points, args.epsilon, args.delta, args.norm_bound,
                        steps=args.steps, lr=args.lr, clip_data=args.clip_data, rng=args.seed,
                        ledger=ledger, secure=args.secure)
    emit({"manifold": repr(manifold), "data": args.data, "dimension": d,
          **published(rel, caught, args, ledger)}, args.format)


def _audit_claim(args: argparse.Namespace, notions: tuple[str, ...]):
    """The claimed guarantee of an audit from --epsilon/--delta/--mu/--rdp-*, one of ``notions``;
    the claim as printed; and the audit options that test it."""
    from .learn.frechet import target_guarantee
    from .privacy import GDP, RDP, ApproxDP

    if (args.rdp_alpha is None) != (args.rdp_epsilon is None):
        raise SystemExit("error: --rdp-alpha and --rdp-epsilon go together")
    rdp = None if args.rdp_alpha is None else (args.rdp_alpha, args.rdp_epsilon)
    if all(v is None for v in (args.epsilon, args.delta, args.mu, rdp)):
        flags = {"epsilon": "--epsilon", "epsilon-delta": "--epsilon with --delta", "mu": "--mu",
                 "rdp": "--rdp-alpha with --rdp-epsilon"}
        raise SystemExit(f"error: auditing the {args.mechanism} mechanism needs a claim: "
                         f"{', or '.join(flags[n] for n in notions)}")
    target = target_guarantee(args.mechanism, notions, args.epsilon, args.delta, args.mu, rdp)
    if isinstance(target, GDP):
        return target, {"mu": target.mu}, {}
    if isinstance(target, ApproxDP):
        return (target, {"epsilon": target.epsilon, "delta": target.delta},
                {"delta": target.delta, "delta_at_epsilon": target.epsilon})
    if isinstance(target, RDP):
        return target, {"rdp_alpha": rdp[0], "rdp_epsilon": rdp[1]}, {"rdp_order": rdp[0]}
    return target, {"epsilon": target.epsilon}, {}


def _audited(claim: dict, result) -> tuple[float, float, float]:
    """The audited lower bound in the claim's own notion, the claimed value, and the largest
    bound in that notion that a run of this many samples could certify (``AuditResult.ceiling``)."""
    eps, mu, delta, rdp = result.ceiling
    if "mu" in claim:
        return result.mu_lower, claim["mu"], mu
    if "rdp_alpha" in claim:
        return result.rdp_lower, claim["rdp_epsilon"], rdp
    if "delta" in claim:
        return result.delta_lower, claim["delta"], delta
    return result.epsilon_lower, claim["epsilon"], eps


def verdict(audited: float, claimed: float, ceiling: float, zero_informs: bool) -> str:
    """The audit's verdict: a violation when the certified lower bound exceeds the claim;
    inconclusive when even the most separated outcome of this many samples could not certify a
    bound above the claim (the test has no power there), or when the bound is 0 in a notion
    where any mechanism with noise worth auditing leaves a positive one (epsilon, mu, RDP; not
    delta, which is 0 for honest mechanisms at small claims); consistent otherwise."""
    if audited > claimed:
        return "VIOLATED: the audited lower bound exceeds the claim"
    if ceiling <= claimed or (audited == 0 and not zero_informs):
        return (f"inconclusive: the lower bound is {audited:.3g} and no outcome of this many "
                f"--samples could certify more than {ceiling:.3g}; raise --samples")
    return "consistent with the claim"


def cmd_audit(args: argparse.Namespace) -> None:
    from .mechanisms.registry import lookup
    from .audit import (audit_mechanism, dp_rgd_step_sampler, kng_log_ratio_statistic,
                        kng_mean_neighbours, kng_mean_sampler, kng_regression_neighbours,
                        kng_regression_sampler, neighbouring_footpoints, projection_statistic)
    from .mechanisms.kng import KNormGradient
    from .privacy.calibration import calibrate
    from .learn.regression import is_compact
    from .statistics.sensitivity import regression_sensitivity

    manifold = _manifold_arg(args.manifold)
    center = manifold.origin()
    options: dict = {}
    statistic = None
    if args.mechanism == "kng-regression":
        if args.epsilon is None:
            raise SystemExit("error: auditing the kng-regression mechanism needs --epsilon")
        claim = {"epsilon": args.epsilon}
        x, y, y_prime = kng_regression_neighbours(manifold, center, args.n, args.x_bound)
        sensitivity = regression_sensitivity(manifold, args.n, args.tau, args.x_bound,
                                             args.v_max)["joint"]
        scale = KNormGradient(sensitivity, args.epsilon).scale
        radius = None if is_compact(manifold) else args.radius
        first, second = (kng_regression_sampler(manifold, x, data, args.tau, args.v_max, scale,
                                                center if radius else None, radius)
                         for data in (y, y_prime))
        statistic = kng_log_ratio_statistic(manifold, x, y, y_prime, args.tau)
    elif args.mechanism == "kng-mean":
        if args.epsilon is None:
            raise SystemExit("error: auditing the kng-mean mechanism needs --epsilon")
        claim = {"epsilon": args.epsilon}
        d, d_prime, direction = kng_mean_neighbours(manifold, center, args.radius, args.n)
        from .learn.frechet import kng_mean_calibration
        sensitivity = kng_mean_calibration(manifold, center, args.radius, args.n)[0]
        scale = KNormGradient(sensitivity, args.epsilon).scale
        first, second = (kng_mean_sampler(manifold, data, center, args.radius, scale)
                         for data in (d, d_prime))
    else:
        sensitivity = args.sensitivity
        near, far, direction = neighbouring_footpoints(manifold, center, sensitivity)
        if args.mechanism == "dp-rgd-step":
            target, claim, options = _audit_claim(args, ("epsilon-delta", "mu", "rdp"))
            scale, mech = calibrate("gaussian", target, sensitivity), None
        else:
            spec = lookup(args.mechanism)
            target, claim, options = _audit_claim(args, spec.notions)
            scale = spec.calibrate(target, sensitivity)
            mech = spec.sampler(manifold, scale, ball=(center, args.radius))

        def sampler(point):
            if mech is None:
                return dp_rgd_step_sampler(manifold, center, point, scale)
            return lambda k, g: mech.sample(point, k, g)

        first, second = sampler(far), sampler(near)
    if statistic is None:
        statistic = projection_statistic(manifold, center, direction)
    result = audit_mechanism(first, second, statistic, args.samples, args.confidence, rng=args.seed,
                             **options)
    audited, claimed, ceiling = _audited(claim, result)
    emit({"mechanism": args.mechanism, "manifold": repr(manifold), "sensitivity": sensitivity,
          "claimed": claim, "audited_lower_bound": audited, **result.as_dict(),
          "largest_certifiable_bound": ceiling,
          "verdict": verdict(audited, claimed, ceiling, "delta" in claim)}, args.format)


#: the paper reproductions: command name -> (module in geodp.experiments, short help, long help,
#: the default of --reps)
REPRODUCTIONS = {
    "reimherr2021": ("reimherr2021", "Figure 1 and Supplement Figure 2 of Reimherr, Bharath & Soto (2021)",
                     "Figure 1: SPD(2) and S^2 sensitivity (every replicate) against Theorem 2, and "
                     "utility of the intrinsic versus the Euclidean Laplace, on S^2 at Theorem 2 "
                     "and at the paper's empirical bound (Supplement B.1, reproduction only); "
                     "Supplement Figure 2 (2r, 2r(2-h) and the empirical bound against r).", 1000),
    "wrapped": ("wrapped", "Figures 1, 2, 3, 7 and Table 1 of the exponential-wrapped mechanisms paper",
                "Figure 1 (SPD, d = 3, 6, 15: eps-DP and GDP, and where the two mechanisms are "
                "comparable), Figure 7 (d = 21), Table 1 (time per release) and Figures 2-3 (the "
                "covariance descriptors of all ten digit classes, for OCTMNIST).", 100),
    "dp-rgd": ("dp_rgd", "Figure 1 of Han et al. (DP Riemannian optimisation)",
               "Figure 1a (leading eigenvector: DP-RGD vs DP-PGD, on the paper's data and on records "
               "rescaled so that the step moves the iterate) and 1b (SPD(2) Fréchet mean: DP-RGD vs "
               "DP-FM), the paper's procedure beside geodp's sound release, and real data (digit "
               "histograms PCA, covariance descriptors).", 20),
    "geodesic-regression": ("geodesic_regression",
                            "Figures 1-3 and 5-10 of Kulkarni & Soto (DP geodesic regression)",
                            "Figures 1 (S^2) and 7 (SPD(2)): log average MSE of the paper's "
                            "procedure over budget splits and sample sizes, beside geodp's sound "
                            "joint release; Figures 2-3 on the trilobite shapes (for the non-public "
                            "corpus-callosum data); 5-6 (larger data noise); 8 (SPD prediction "
                            "ellipses); 9-10 (Appendix G sensitivity ratios, with worst-case "
                            "neighbours). --reps K gives K x K private pairs per budget.", 3),
}


def reproduce(name: str, out: Path, reps: int, seed: int, quick: bool) -> dict:
    """Run one paper's reproduction (``quick``: the smoke-test mode, under 20 s)."""
    import importlib
    import time

    run = importlib.import_module(f".experiments.{REPRODUCTIONS[name][0]}", __package__).run
    start = time.perf_counter()
    summary = run(out, reps=reps, seed=seed, quick=quick)
    summary["seconds"] = round(time.perf_counter() - start, 1)
    if not summary.get("png", True):
        summary["png_note"] = ("matplotlib is not installed, so only the CSV files were written: "
                               "pip install 'geodp[plot]' adds the figures")
    return summary


def cmd_reproduce(args: argparse.Namespace) -> None:
    if args.paper != "all" and args.reps < 1:
        raise SystemExit(f"error: --reps must be a positive integer, got {args.reps}")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise SystemExit(f"error: --out {args.out!r} is a file; give a directory")
    if args.paper != "all":
        emit(reproduce(args.paper, Path(args.out), args.reps, args.seed, args.quick), args.format)
        return
    results = {}
    for name, spec in REPRODUCTIONS.items():
        summary = reproduce(name, Path(args.out) / name, spec[3], args.seed, args.quick)
        verdicts = [f["verdict"] for f in summary.get("findings", [])]
        results[name] = {key: summary[key] for key in ("output", "summary", "png", "seconds",
                                                       "png_note") if key in summary}
        if verdicts:
            results[name]["verdicts"] = {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}
    emit({"quick": args.quick, "seed": args.seed, "reproductions": results}, args.format)


def cmd_budget(args: argparse.Namespace) -> None:
    from .privacy import BudgetLedger

    if args.action == "init":
        if args.epsilon is None:
            raise SystemExit("error: geodp budget init needs --epsilon (and optionally --delta)")
        if Path(args.ledger).exists():
            raise SystemExit(f"error: {args.ledger!r} already exists; 'geodp budget show --ledger "
                             f"{args.ledger}' reads it (nothing was changed)")
        ledger = BudgetLedger(args.ledger, args.epsilon, args.delta)
    else:
        ledger = open_ledger(args.ledger)
    eps, delta = ledger.spent()
    basic_eps, basic_delta = ledger.spent_basic()
    relation = ledger.relation()
    out = {"ledger": str(args.ledger), "total_epsilon": ledger.total_epsilon,
           "total_delta": ledger.total_delta, "spent_epsilon": eps, "spent_delta": delta,
           "remaining_epsilon": ledger.total_epsilon - eps,
           "remaining_delta": ledger.total_delta - delta,
           "relation": None if relation is None else relation.value,
           "composition": "tightest of RDP, GDP, privacy loss distributions and basic; entries "
                          "of mixed relations stated under replace-one by group privacy",
           "basic_composition": {"spent_epsilon": basic_eps, "spent_delta": basic_delta}}
    if args.action == "history":
        out["entries"] = [{**e, "reserved_at": _iso(e["reserved_at"]), "done_at": _iso(e["done_at"])}
                          for e in ledger.history()]
    emit(out, args.format)


def _iso(timestamp: float | None) -> str | None:
    """A Unix time as an ISO 8601 UTC timestamp."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="milliseconds")


class HELP(argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows defaults, except empty ones and those the text already states."""

    def _get_help_string(self, action):
        if action.default in (None, False) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


QUIET = argparse.ArgumentParser(add_help=False)
QUIET.add_argument("--quiet", action="store_true",
                   help="no progress bars on stderr (they are shown only on a terminal)")
DASK = argparse.ArgumentParser(add_help=False)
DASK.add_argument("--scheduler", metavar="ADDRESS",
                  help="run on a running dask.distributed scheduler (e.g. tcp://host:8786); the "
                       "data are read chunked, by the workers")
DASK.add_argument("--workers", type=int, metavar="N",
                  help="run on a local Dask cluster of N worker processes started for the call")
FORMAT = argparse.ArgumentParser(add_help=False)
FORMAT.add_argument("--format", choices=("json", "text"), default="json",
                    help="output: JSON (for programs) or text for people (a matrix as aligned rows, "
                         "the guarantee statement, the public parameters)")
RELEASE = argparse.ArgumentParser(add_help=False, parents=[QUIET, FORMAT])
RELEASE.add_argument("--ledger", help="budget ledger to charge (see 'geodp budget')")
RELEASE.add_argument("--seed", type=int, help="seed for reproducible noise (default: OS entropy)")
RELEASE.add_argument("--diagnostics", action="store_true",
                     help="also print NON-PRIVATE diagnostics computed from the data without noise "
                          "(clipped records, iterations, sampler acceptance, losses), under "
                          "'diagnostics_not_private': for the data curator, never to publish")
SECURE_HELP = ("discrete Gaussian noise on a fine grid, drawn from the operating system's secure "
               "source (against floating-point attacks; zCDP accounting; not reproducible by "
               "--seed)")
APPROXIMATE_HELP = ("where no exact sampler can draw the release, release the state of "
                    "Metropolis-Hastings chains (epsilon-DP for the target law; the chain's output "
                    "is approximate; R-hat and ESS in the diagnostics) instead of refusing")


def build_parser(commands: bool = True) -> argparse.ArgumentParser:
    """The ``geodp`` parser. ``commands=False`` leaves out what the subcommands' own options need
    from the library (the manifold specifications, the registered mechanisms): enough for
    ``geodp --help`` and ``--version``, which then import neither NumPy nor SciPy."""
    if commands:
        from .manifolds.spec import SPEC_HELP
        from .mechanisms.registry import MECHANISMS
    else:
        SPEC_HELP, MECHANISMS = "", {}
    parser = argparse.ArgumentParser(formatter_class=HELP,
        prog="geodp", description="Differential privacy on Riemannian manifolds.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"geodp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("mean", formatter_class=HELP, parents=[QUIET, FORMAT, DASK],
                       help="Fréchet mean of manifold-valued data (not private)",
                       description="Compute the Fréchet mean by Riemannian gradient descent.")
    p.add_argument("data", help="a .npy/.csv file or a built-in data set name (see 'geodp datasets')")
    p.add_argument("--manifold", help=SPEC_HELP)
    p.add_argument("--tol", type=float, default=1e-10, help="gradient-norm tolerance")
    p.add_argument("--max-iter", type=int, default=500, help="iteration limit")
    p.set_defaults(func=cmd_mean)

    p = sub.add_parser("release", formatter_class=HELP,
                       help="private releases (see 'geodp release mean --help')",
                       description="Differentially private releases of manifold-valued statistics.")
    rsub = p.add_subparsers(dest="release", required=True)
    p = rsub.add_parser("mean", formatter_class=HELP, parents=[RELEASE, DASK],
                        help="a differentially private Fréchet mean",
                        description="Release the Fréchet mean of the data with a privacy "
                                    "guarantee; prints the release and its guarantee as JSON (or text: --format text).")
    p.add_argument("data", help="a .npy/.csv file or a built-in data set name")
    p.add_argument("--manifold", help=SPEC_HELP)
    p.add_argument("--mechanism", default="laplace",
                   choices=list(MECHANISMS),
                   help="; ".join(f"{name}: {m.summary}" for name, m in MECHANISMS.items()))
    p.add_argument("--epsilon", type=float, help="epsilon of epsilon-DP or (epsilon, delta)-DP")
    p.add_argument("--delta", type=float,
                   help="delta of (epsilon, delta)-DP (wrapped-gaussian, dp-rgd)")
    p.add_argument("--steps", type=int, help="dp-rgd: gradient steps (default 3)")
    p.add_argument("--lr", type=float, help="dp-rgd: step size (default 0.7)")
    p.add_argument("--mu", type=float, help="mu of mu-GDP (wrapped-gaussian)")
    p.add_argument("--rdp-alpha", type=float, help="order alpha of (alpha, eps)-RDP")
    p.add_argument("--rdp-epsilon", type=float, help="eps of (alpha, eps)-RDP")
    p.add_argument("--footpoint", help="wrapped mechanisms: public footpoint ('identity', JSON or "
                                       ".npy; default: the center) or 'private'")
    p.add_argument("--footpoint-budget", type=float,
                   help="--footpoint private: share of the budget spent on the footpoint "
                        "(default 0.1)")
    p.add_argument("--tangent-sensitivity", type=float,
                   help="a proven bound on |Log_p0 f(D) - Log_p0 f(D')| (default: Delta)")
    p.add_argument("--center", help="public center of the data ball: 'identity', JSON or .npy")
    p.add_argument("--radius", type=float, help="public radius of the data ball")
    p.add_argument("--clip-data", action="store_true", help="move points outside the ball onto it")
    p.add_argument("--restrict", action="store_true",
                   help="condition the output on the data ball (Theorem 3; doubles the scale)")
    p.add_argument("--allow-approximate", action="store_true", help=APPROXIMATE_HELP)
    p.add_argument("--secure", action="store_true", help=SECURE_HELP + " (dp-rgd only)")
    p.add_argument("--max-condition", metavar="K",
                   help="affine-invariant SPD: a public bound K on every record's condition number "
                        "(a number, or 'public': the one shipped with a data set); makes the "
                        "computed mean's tolerance and the Laplace's precision bound worst cases "
                        "(records above K are refused, or capped with --clip-data)")
    p.set_defaults(func=cmd_release_mean)

    p = rsub.add_parser("regression", formatter_class=HELP, parents=[RELEASE],
                        help="a differentially private geodesic regression (K-norm gradient)",
                        description="Release the footpoint and shooting vector of a geodesic "
                                    "regression with epsilon-DP (Kulkarni & Soto, in a sound form); "
                                    "prints JSON (or text: --format text).")
    p.add_argument("data", help="a built-in data set with a covariate (trilobites), an .npz file "
                                "(arrays x, y) or a .csv file (covariate, then the point)")
    p.add_argument("--manifold", help=SPEC_HELP)
    p.add_argument("--epsilon", type=float, required=True, help="epsilon of epsilon-DP")
    p.add_argument("--tau", type=float, required=True, help="public bound the residuals are clipped to")
    p.add_argument("--x-range", type=float, nargs=2, metavar=("LO", "HI"),
                   help="public covariate range (default: the one shipped with a data set)")
    p.add_argument("--v-max", type=float, required=True, help="public bound on |shooting vector|")
    p.add_argument("--center", help="public center of the footpoint ball (non-compact manifolds)")
    p.add_argument("--radius", type=float, help="public radius of the footpoint ball")
    p.add_argument("--release", default="joint", choices=["joint", "sequential"],
                   help="one joint KNG draw, or footpoint then shooting vector")
    p.add_argument("--footpoint-budget", type=float,
                   help="sequential: share of epsilon for the footpoint (default 0.5)")
    p.add_argument("--clip-data", action="store_true", help="clip covariates into --x-range")
    p.add_argument("--max-steps", type=int,
                   help="most steps the sampler's chains may run on to mix (default 3200)")
    p.add_argument("--allow-approximate", action="store_true", help=APPROXIMATE_HELP)
    p.set_defaults(func=cmd_release_regression)

    p = rsub.add_parser("pca", formatter_class=HELP, parents=[RELEASE],
                        help="a differentially private leading eigenvector or principal subspace",
                        description="Release the leading eigenvector (on the sphere) or the top-K "
                                    "principal subspace (on the Grassmann manifold) of (1/n) sum_i "
                                    "z_i z_i^T by DP Riemannian gradient descent (Han et al., "
                                    "Section 5.1); prints the release as JSON (or text: --format text).")
    p.add_argument("data", help="a .npy/.csv file of vectors (one per row) or a built-in data set")
    p.add_argument("--manifold",
                   help="where the release lives, for rows of length D: "
                        + PCA_SPACES.format(last="D-1", d="D") + " (default: sphere:D-1)")
    p.add_argument("--epsilon", type=float, required=True, help="epsilon of (epsilon, delta)-DP")
    p.add_argument("--delta", type=float, required=True, help="delta of (epsilon, delta)-DP")
    p.add_argument("--norm-bound", type=float, required=True,
                   help="public bound on every row's Euclidean norm (not computed from the data)")
    p.add_argument("--clip-data", action="store_true", help="scale rows above the bound back to it")
    p.add_argument("--steps", type=int, default=100, help="gradient steps (default 100)")
    p.add_argument("--lr", type=float, help="step size (default 1 / (2 norm_bound^2))")
    p.add_argument("--secure", action="store_true", help=SECURE_HELP)
    p.set_defaults(func=cmd_release_pca)

    p = sub.add_parser("reproduce", formatter_class=HELP, help="regenerate a paper's figures (PNG + CSV)",
                       description="Reproduce the figures of the papers geodp implements.")
    rsub = p.add_subparsers(dest="paper", required=True)
    quick_help = ("smoke test: a few sample sizes or budgets and few replicates, each "
                  "reproduction in seconds (not the paper's counts; summary.md says so)")
    for name, (_, short, long, reps) in REPRODUCTIONS.items():
        p = rsub.add_parser(name, formatter_class=HELP, parents=[QUIET, FORMAT], help=short,
                            description=long)
        p.add_argument("--reps", type=int, default=reps, help="replicates per point")
        p.add_argument("--out", default=f"out/{name}", help="output directory")
        p.add_argument("--seed", type=int, default=0, help="random seed")
        p.add_argument("--quick", action="store_true", help=quick_help)
        p.set_defaults(func=cmd_reproduce)
    p = rsub.add_parser("all", formatter_class=HELP, parents=[QUIET, FORMAT],
                        help="all four reproductions, each at its default --reps",
                        description="Run every reproduction (" + ", ".join(REPRODUCTIONS) + "), each "
                                    "into its own directory under --out, at its default --reps; "
                                    "prints where each wrote its summary.md and its verdicts.")
    p.add_argument("--out", default="out", help="parent directory (one subdirectory per paper)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("budget", formatter_class=HELP, parents=[FORMAT],
                       help="create or inspect a privacy budget ledger",
                       description="Create (init), summarise (show) or list (history) a persistent "
                                   "privacy budget ledger.")
    p.add_argument("action", choices=["init", "show", "history"])
    p.add_argument("--ledger", required=True, help="ledger file (SQLite)")
    p.add_argument("--epsilon", type=float, help="total epsilon (init only)")
    p.add_argument("--delta", type=float, default=0.0, help="total delta (init only)")
    p.set_defaults(func=cmd_budget)

    p = sub.add_parser("audit", formatter_class=HELP, parents=[QUIET, FORMAT],
                       help="audit a mechanism: an empirical lower bound on its privacy parameter",
                       description="Draw from a mechanism on two neighbouring inputs (footpoints at "
                                   "distance --sensitivity) and print a rigorous lower bound on its "
                                   "epsilon (or mu), next to the claim, as JSON (or text: --format text).")
    p.add_argument("mechanism", choices=[name for name, m in MECHANISMS.items()
                                         if m.perturbs == "output"]
                   + ["dp-rgd-step", "kng-mean", "kng-regression"])
    p.add_argument("--manifold", default="sphere:2", help=SPEC_HELP)
    p.add_argument("--epsilon", type=float,
                   help="claimed epsilon (Laplace and KNG mechanisms; with --delta, Gaussian ones)")
    p.add_argument("--delta", type=float, help="claimed delta of (epsilon, delta)-DP (Gaussian)")
    p.add_argument("--mu", type=float, help="claimed mu of mu-GDP (Gaussian mechanisms)")
    p.add_argument("--rdp-alpha", type=float, help="order of a claimed (alpha, eps)-RDP (Gaussian)")
    p.add_argument("--rdp-epsilon", type=float, help="eps of a claimed (alpha, eps)-RDP (Gaussian)")
    p.add_argument("--sensitivity", type=float, default=0.1, help="distance between the neighbours")
    p.add_argument("--radius", type=float, default=0.5,
                   help="kng-mean: radius of the data ball (neighbours differ in a record at each "
                        "end); kng-regression: radius of the footpoint ball (non-compact manifolds)")
    p.add_argument("--n", type=int, default=10,
                   help="kng-mean, kng-regression: records in each data set (kng-regression "
                        "needs few, 2-5, for its exact sampler)")
    p.add_argument("--tau", type=float, default=0.5, help="kng-regression: residual bound")
    p.add_argument("--v-max", type=float, default=1.0, help="kng-regression: shooting-vector bound")
    p.add_argument("--x-bound", type=float, default=1.0,
                   help="kng-regression: the records' covariate (the largest |x| of the range)")
    p.add_argument("--samples", type=int, default=200_000, help="draws on each input")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bound")
    p.add_argument("--seed", type=int, help="seed (default: OS entropy)")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("datasets", formatter_class=HELP, parents=[FORMAT],
                       help="list the built-in real data sets",
                       description="List the real data sets shipped with geodp.")
    p.set_defaults(func=cmd_datasets)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; every error is one line on stderr and exit status 2, never a
    traceback (exit 1 is left to Python for bugs)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if all(a.startswith("-") for a in argv):  # no subcommand: help, version or a usage error
        build_parser(commands=False).parse_args(argv)  # exits
    parser = build_parser()
    args = parser.parse_args(argv)

    import sqlite3

    from .parameters import Spelled
    from .privacy import BudgetExceededError
    from .progress import showing

    try:
        with showing(not getattr(args, "quiet", False)):
            args.func(args)
    except (ValueError, TypeError, OSError, RuntimeError, ArithmeticError, sqlite3.Error,
            BudgetExceededError) as exc:  # a refusal naming parameters names them as flags
        spelled = exc.spelled(command_spelling(parser, argv)) if isinstance(exc, Spelled) else exc
        message = f"error: {spelled}"
    except SystemExit as exc:
        if not isinstance(exc.code, str):
            raise
        message = exc.code if exc.code.startswith("error:") else f"error: {exc.code}"
    else:
        return 0
    print(message, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
