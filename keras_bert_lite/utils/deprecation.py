"""Former names, kept for one release: they still work, and say (a `DeprecationWarning`) what replaced them.

# keras_bert_lite/hub_names.py, a module renamed hf_hub.py:
alias_module(__name__, "keras_bert_lite.hf_hub")

# a module whose attributes were renamed:
__getattr__ = renamed_attributes(__name__, {"init_vocab": "vocab_given_or_beside"})
"""

from __future__ import annotations

import importlib
import sys
import warnings


def warn_renamed(old: str, new: str, stacklevel: int = 2) -> None:
    """Issues the `DeprecationWarning` of a former name.

    Args:
        old: the former name, as users wrote it.
        new: the name that replaced it.
        stacklevel: the caller's frame to blame, as `warnings.warn` counts from the caller of this function.
    """
    warnings.warn(
        f"{old} is deprecated and goes in the next release: use {new}.", DeprecationWarning, stacklevel=stacklevel + 1
    )


def alias_module(old: str, new: str) -> None:
    """Makes the module `old`, whose body calls this, the module `new`: every name of it (private ones too) is
    `new`'s object, and setting one sets `new`'s.

    Args:
        old: the former module's name (its `__name__`).
        new: the module that replaced it.
    """
    # Blamed: the import statement (importlib's own frames are skipped), past the former module's body.
    warn_renamed(old, new, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)


def renamed_attributes(module: str, renames: dict[str, str], otherwise=None):
    """A module `__getattr__` that gives each former name the object of its new name in the same module.

    Args:
        module: the module's `__name__`.
        renames: former name -> new name.
        otherwise: the `__getattr__` the module has for other names, if any.

    Returns:
        The `__getattr__` function; other names go to `otherwise`, else raise AttributeError as usual.
    """

    def __getattr__(name):
        if name not in renames:
            if otherwise is not None:
                return otherwise(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_renamed(f"{module}.{name}", f"{module}.{renames[name]}")
        return getattr(sys.modules[module], renames[name])

    return __getattr__
