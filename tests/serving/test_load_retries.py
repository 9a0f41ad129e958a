"""When a version that failed to load is tried again: on a change of its files, else with bounded backoff."""

from keras_bert_lite.serving.load_retries import LoadRetries


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_an_unchanged_version_is_retried_with_doubling_backoff_a_bounded_number_of_times(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"x")
    clock = Clock()
    retries = LoadRetries(first_delay=1.0, max_retries=3, clock=clock)
    assert retries.may_try(1, tmp_path)
    delays = []
    for _ in range(4):
        delays.append(retries.failed(1, tmp_path))
        if delays[-1] is None:
            break
        clock.now += delays[-1] - 0.01
        assert not retries.may_try(1, tmp_path)
        clock.now += 0.01
        assert retries.may_try(1, tmp_path)
    assert delays == [1.0, 2.0, 4.0, None]  # 3 retries, then none
    clock.now += 1e6
    assert not retries.may_try(1, tmp_path)


def test_a_changed_version_is_retried_at_once_even_after_its_retries_ran_out(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"x")
    retries = LoadRetries(first_delay=1.0, max_retries=0, clock=Clock())
    assert retries.failed(1, tmp_path) is None
    assert not retries.may_try(1, tmp_path)
    (tmp_path / "variables").mkdir()
    (tmp_path / "variables" / "variables.index").write_bytes(b"i")  # the rest of a copy lands
    assert retries.may_try(1, tmp_path)


def test_success_and_removal_forget_the_failures(tmp_path):
    retries = LoadRetries(first_delay=1.0, max_retries=0, clock=Clock())
    retries.failed(1, tmp_path)
    retries.failed(2, tmp_path)
    retries.succeeded(1)
    retries.forget_missing({3: "elsewhere"})
    assert retries.may_try(1, tmp_path) and retries.may_try(2, tmp_path)
