"""Command-line flags declared once: each job dataclass field carries its flag (`flag(...)`), with the values it
admits (numeric bounds, or `choices`), and the parser is built from the fields. A runner's job inherits the shared
fields and overrides a default with `redefault`, keeping the flag's help and bounds; `--help` shows each true
default once.

A job checks its fields when it is constructed (`CheckedFlags`), from the command line or from Python, before
anything is created: each field against its range, then the fields together (`check`: exactly one model source,
files given in pairs). On the command line a refusal is one usage error, as argparse's own,

    kbl-pretrain: error: argument --steps: must be >= 1, got 0
    kbl-glue: error: Give exactly one of --init (pretrained weights), --preset and --config (from scratch); got none.
"""

from __future__ import annotations

import argparse
import dataclasses

from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.utils import bounds as value_bounds

MAX_SEED = 2**32 - 1  # keras.utils.set_random_seed seeds NumPy, which takes 0 to 2**32 - 1


def flag(
    default,
    help: str = "",
    *,
    group: str = "training",
    names: tuple[str, ...] = (),
    input_path: bool = False,
    minimum=None,
    maximum=None,
    above=None,
    below=None,
    **argparse_kwargs,
):
    """A dataclass field that is also a command-line flag.

    Args:
        default: the field's (and the flag's) default; None, or a `choices` flag's "", means not given.
        help: the help text; the bounds and "(default: ...)" for a default worth showing are appended.
        group: the `--help` section.
        names: option strings (default: `--<field name>`); `(<field name>,)` for a positional argument.
        input_path: the value names files the run reads (a resumed run compares their contents:
            `runners.input_digests`).
        minimum, maximum: inclusive bounds of a numeric value (each element of a tuple); None: no bound.
        above, below: exclusive bounds. A float flag (`type=float`) must also be finite.
        **argparse_kwargs: passed to `add_argument` (`type`, `choices`, `action`, `metavar`, `required`);
            `choices` are checked in Python too.
    """
    bounds = {
        name: value
        for name, value in (("minimum", minimum), ("maximum", maximum), ("above", above), ("below", below))
        if value is not None
    }
    metadata = {
        "help": help,
        "group": group,
        "names": names,
        "input_path": input_path,
        "bounds": bounds,
        "argparse": argparse_kwargs,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("flag defaults must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata={"flag": metadata})


def redefault(job_class, name: str, default):
    """The field `name` of `job_class` with another default (same flag, help and bounds): for a runner's own
    defaults."""
    field = next(f for f in dataclasses.fields(job_class) if f.name == name)
    meta = field.metadata["flag"]
    return flag(
        default,
        meta["help"],
        group=meta["group"],
        names=meta["names"],
        input_path=meta["input_path"],
        **meta["bounds"],
        **meta["argparse"],
    )


class FlagValueError(SettingsError):
    """A flag's value outside its bounds or choices."""


class CheckedFlags:
    """The base of a dataclass of `flag` fields: constructing one checks every field (`check_flags`), then the
    fields together (`check`), so that a refused job is never run and creates nothing."""

    def __post_init__(self):
        check_flags(self)
        self.check()

    def check(self) -> None:
        """Refuses settings that contradict each other. A job with such rules overrides this, calling
        `super().check()` first; rules that need files, the model or the devices belong to the run.

        Raises:
            SettingsError: naming the flags and the fix.
        """


def check_flags(job) -> None:
    """Refuses a field of `job` (a dataclass of `flag` fields) outside its bounds or choices.

    Raises:
        FlagValueError: naming the flag, the value and what it admits, e.g. "--steps: must be >= 1, got 0".
    """
    for field in dataclasses.fields(job):
        message = _refusal(field, getattr(job, field.name))
        if message:
            raise FlagValueError(f"{option_names(field)}: {message}")


def _refusal(field, value) -> str:
    """Why the field's flag does not admit `value` ("" where it does); a tuple's elements are checked each."""
    meta = field.metadata.get("flag")
    if meta is None or (value is None and field.default is None):
        return ""
    choices = meta["argparse"].get("choices")
    if choices is not None:
        admitted = value in choices or value == field.default
        return "" if admitted else f"must be one of {', '.join(map(str, choices))}, got {value!r}"
    if not meta["bounds"] and meta["argparse"].get("type") is not float:
        return ""
    values = value if isinstance(value, tuple) else (value,)
    return next(filter(None, (value_bounds.refusal(v, meta["bounds"]) for v in values)), "")


def option_names(field) -> str:
    """A field's option strings as argparse names them in errors, e.g. "--seeds/--seed"."""
    return "/".join(field.metadata["flag"]["names"] or (f"--{field.name}",))


def build_parser(job_class, description: str, prog: str | None = None) -> argparse.ArgumentParser:
    """An `ArgumentParser` with one flag per field of `job_class`, in field order, grouped by `group` (the
    "output" group last)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    groups = {}
    fields = sorted(dataclasses.fields(job_class), key=lambda f: f.metadata.get("flag", {}).get("group") == "output")
    for field in fields:
        meta = field.metadata.get("flag")
        if meta is None:
            continue
        if meta["group"] not in groups:
            groups[meta["group"]] = parser.add_argument_group(meta["group"])
        kwargs = dict(meta["argparse"])
        if not meta["names"] or meta["names"][0].startswith("-"):  # a positional argument's name is its dest
            kwargs.setdefault("dest", field.name)
        kwargs["default"] = field.default
        kwargs["help"] = _help_text(field).replace("%", "%%")
        groups[meta["group"]].add_argument(*(meta["names"] or (f"--{field.name}",)), **kwargs)
    return parser


def _help_text(field) -> str:
    """The help, then the bounds ("[>= 1]") and the default worth showing ("(default: 32)")."""
    meta = field.metadata["flag"]
    parts = [meta["help"]] if meta["help"] else []
    if meta["bounds"]:
        parts.append(f"[{value_bounds.describe(meta['bounds'])}]")
    shown = ",".join(map(str, field.default)) if isinstance(field.default, tuple) else field.default
    if _shows_default(field.default) and meta["argparse"].get("action") not in ("store_true", "store_false"):
        parts.append(f"(default: {shown})" if parts else f"default: {shown}")
    return " ".join(parts)


def _shows_default(default) -> bool:
    """Whether `--help` shows `default`: every default but None, False, "" and () (no value). 0 and 0.0 are shown:
    `0 == False`, so the test is by identity and type, not `in`."""
    return default is not None and default is not False and not (isinstance(default, (str, tuple)) and not default)


def parse_job(job_class, argv=None, description: str = "", prog: str | None = None):
    """Parses `argv` into a `job_class` instance; a value out of its flag's bounds or choices, or flags that
    contradict each other (`CheckedFlags.check`), exit as argparse's own usage errors do (one "error:" line,
    status 2)."""
    parser = build_parser(job_class, description, prog)
    args = parser.parse_args(argv)
    try:
        return job_class(**vars(args))
    except FlagValueError as error:
        parser.error(f"argument {error}")
    except SettingsError as error:
        parser.error(str(error))


# ---------------------------------------------------------------- value types (their names show in errors)
def true_or_false(text: str) -> bool:
    """A boolean flag value: true/false (also yes/no, 1/0)."""
    value = text.strip().lower()
    if value in ("true", "yes", "1"):
        return True
    if value in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: give true or false")


def names(text: str) -> tuple[str, ...]:
    """Comma-separated names (a leading `--` is dropped)."""
    return tuple(name.strip().lstrip("-") for name in text.split(",") if name.strip())


def distinct_integers(text: str) -> tuple[int, ...]:
    """Comma-separated distinct integers, e.g. 1,2,3."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give comma-separated integers, e.g. 1,2,3") from None
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"{text!r}: give distinct comma-separated integers, e.g. 1,2,3")
    return values
