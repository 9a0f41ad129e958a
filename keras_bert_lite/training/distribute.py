"""Pick a tf.distribute strategy from a flag, TF_CONFIG, the local devices or a TPU cluster resolver."""

from __future__ import annotations

import json
import logging
import os

import tensorflow as tf

logger = logging.getLogger(__name__)

STRATEGIES = ("auto", "cpu", "mirrored", "multi_worker", "tpu")
_TF_CONFIG_EXAMPLE = (
    'TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 0}}\'.'
)


def _tf_config_workers() -> int:
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    return len(config.get("cluster", {}).get("worker", []))


def tf_config_problem(name: str) -> str:
    """What is wrong with the TF_CONFIG environment variable for the strategy `name`, or "" (checked before a
    command creates anything: `resolve_strategy` would fail later)."""
    try:
        workers = _tf_config_workers()
    except (ValueError, AttributeError):
        return "TF_CONFIG is not a JSON object with a cluster of workers; fix or unset it, e.g. " + _TF_CONFIG_EXAMPLE
    if name == "multi_worker" and workers < 1:
        return "--strategy multi_worker needs TF_CONFIG with a cluster of workers, e.g. " + _TF_CONFIG_EXAMPLE
    return ""


def resolve_strategy(name: str = "auto", tpu: str | None = None) -> tf.distribute.Strategy:
    """Returns the strategy for `name`.

    Args:
        name: "auto" (multi_worker if TF_CONFIG lists >1 worker, else mirrored over >1 GPU, else the default
            strategy: the one GPU or the CPU), "cpu" (the default strategy with the GPUs hidden), "mirrored" (all
            local GPUs, or the logical CPU devices if there is no GPU), "multi_worker"
            (MultiWorkerMirroredStrategy from TF_CONFIG), "tpu" (TPUStrategy through a TPUClusterResolver).
        tpu: TPU name or grpc address for "tpu" ("" or None = the local TPU VM).

    One device means TensorFlow's default strategy, not `OneDeviceStrategy`: under `OneDeviceStrategy` Keras
    distributes the dataset and runs each `fit` step through a distributed iterator, whose per-step overhead
    slows fine-tuning on dynamically padded batches.

    Must be called at program start, before other TensorFlow work (multi-worker collectives, TPU
    initialisation and hiding the GPUs for "cpu" require it).
    """
    if name not in STRATEGIES:
        raise ValueError(f"--strategy must be one of {STRATEGIES}, got {name!r}.")
    if name == "auto":
        if _tf_config_workers() > 1:
            name = "multi_worker"
        elif len(tf.config.list_logical_devices("GPU")) > 1:
            name = "mirrored"
        else:
            return tf.distribute.get_strategy()
    if name == "cpu":
        if tf.config.list_physical_devices("GPU"):
            try:
                tf.config.set_visible_devices([], "GPU")
            except RuntimeError:  # TensorFlow already initialised its devices (a second run in one process)
                return tf.distribute.OneDeviceStrategy("/cpu:0")
        return tf.distribute.get_strategy()
    if name == "mirrored":
        devices = [d.name for d in tf.config.list_logical_devices("GPU")] or [
            d.name for d in tf.config.list_logical_devices("CPU")
        ]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        if tf_config_problem(name):
            raise ValueError(tf_config_problem(name))
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def is_chief_task() -> bool:
    """`is_chief` before the strategy exists, from TF_CONFIG's task: True without one."""
    task = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}").get("task") or {}
    return task.get("type") in (None, "chief") or (task.get("type") == "worker" and int(task.get("index", 0)) == 0)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes checkpoints, logs and exports (worker 0, or the only worker)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    return resolver.task_type in (None, "chief") or (resolver.task_type == "worker" and resolver.task_id == 0)


def split_logical_cpus(count: int) -> None:
    """Splits the CPU into `count` logical devices (to run MirroredStrategy on a CPU-only machine, e.g. tests).

    Must run before TensorFlow initialises its devices.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
