"""Which versions of a model to serve, of those on disk: TF Serving's `model_version_policy`.

As TF Serving's file-system source (file_system_storage_path_source.cc) reads it:

- `latest { num_versions: N }` (the default, N = 1; 0 counts as 1): the N highest versions;
- `all {}`: every version;
- `specific { versions: [...] }`: the listed versions that are on disk (the others are logged as missing).

What the policy selects is only what the model *aspires* to serve; `ModelManager` loads those versions and keeps
an older one serving until one of them is available (TF Serving's availability-preserving policy).
"""

import dataclasses

LATEST = "latest"
ALL = "all"
SPECIFIC = "specific"


@dataclasses.dataclass(frozen=True)
class VersionPolicy:
    """A model's version policy.

    Attributes:
        kind: "latest", "all" or "specific".
        num_versions: For "latest": how many of the highest versions.
        versions: For "specific": the versions to serve, sorted.
    """

    kind: str = LATEST
    num_versions: int = 1
    versions: tuple = ()

    def select(self, on_disk):
        """The versions among `on_disk` (an iterable of ints) this policy serves, as a set."""
        if self.kind == ALL:
            return set(on_disk)
        if self.kind == SPECIFIC:
            return set(on_disk) & set(self.versions)
        return set(sorted(on_disk)[-max(self.num_versions, 1) :])

    def missing(self, on_disk):
        """The versions a "specific" policy lists that are not among `on_disk`, sorted."""
        return sorted(set(self.versions) - set(on_disk)) if self.kind == SPECIFIC else []

    def __str__(self):
        if self.kind == SPECIFIC:
            return f"specific {list(self.versions)}"
        return f"latest {max(self.num_versions, 1)}" if self.kind == LATEST else ALL


def from_proto(proto):
    """The `VersionPolicy` of a `FileSystemStoragePathSourceConfig.ServableVersionPolicy` message."""
    kind = proto.WhichOneof("policy_choice") or LATEST
    if kind == SPECIFIC:
        return VersionPolicy(SPECIFIC, versions=tuple(sorted(set(proto.specific.versions))))
    if kind == ALL:
        return VersionPolicy(ALL)
    return VersionPolicy(LATEST, num_versions=max(proto.latest.num_versions, 1))
