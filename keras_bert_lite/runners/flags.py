"""Command-line flags declared once: each job dataclass field carries its flag (`flag(...)`), and the parser is
built from the fields. A runner's job inherits the shared fields and overrides a default with `redefault`,
keeping the flag's help; `--help` shows each true default once."""

from __future__ import annotations

import argparse
import dataclasses

_NO_DEFAULT_SHOWN = (None, "", (), False)


def flag(default, help: str = "", *, group: str = "training", names: tuple[str, ...] = (), input_path: bool = False,
         **argparse_kwargs):
    """A dataclass field that is also a command-line flag.

    Args:
        default: the field's (and the flag's) default.
        help: the help text; "(default: ...)" is appended for a default worth showing.
        group: the `--help` section.
        names: option strings (default: `--<field name>`).
        input_path: the value names files the run reads (a resumed run compares their contents:
            `runners.input_digests`).
        **argparse_kwargs: passed to `add_argument` (`type`, `choices`, `action`, `metavar`, `required`).
    """
    metadata = {"help": help, "group": group, "names": names, "input_path": input_path, "argparse": argparse_kwargs}
    if isinstance(default, (list, dict, set)):
        raise TypeError("flag defaults must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata={"flag": metadata})


def redefault(job_class, name: str, default):
    """The field `name` of `job_class` with another default (same flag and help): for a runner's own defaults."""
    field = next(f for f in dataclasses.fields(job_class) if f.name == name)
    meta = field.metadata["flag"]
    return flag(default, meta["help"], group=meta["group"], names=meta["names"], input_path=meta["input_path"],
                **meta["argparse"])


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
        kwargs.setdefault("dest", field.name)
        kwargs["default"] = field.default
        shown = field.default
        if isinstance(shown, tuple):
            shown = ",".join(map(str, shown))
        help_text = meta["help"]
        if field.default not in _NO_DEFAULT_SHOWN and kwargs.get("action") not in ("store_true", "store_false"):
            help_text = f"{help_text} (default: {shown})" if help_text else f"default: {shown}"
        kwargs["help"] = help_text.replace("%", "%%")
        groups[meta["group"]].add_argument(*(meta["names"] or (f"--{field.name}",)), **kwargs)
    return parser


def parse_job(job_class, argv=None, description: str = "", prog: str | None = None):
    """Parses `argv` into a `job_class` instance."""
    args = build_parser(job_class, description, prog).parse_args(argv)
    return job_class(**vars(args))


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
