"""The timing methods (harness/common/methods/, one file each): what each declares (what it times a sample with, its
lead and its Config fields), which the worker samples by and the judge agrees both sides and sets the resolution by;
and the order the Timer asks them in."""
import pytest

from harness.common import methods


def test_the_four_methods_declare_how_they_time():
    declared = {m.name: (m.batched, m.graph, m.host_clock) for m in methods.METHODS.values()}
    assert declared == {"perf_counter": (False, False, True), "cuda_event": (False, False, False),
                        "cuda_graph": (True, True, False), "batched_events": (True, False, False)}


@pytest.mark.parametrize("name, cold, work", [
    ("cuda_event", True, (4, 4)), ("cuda_event", False, (4, 0)), ("perf_counter", True, (4, 4)),
    ("cuda_graph", True, (8, 20)), ("batched_events", False, (12, 0)),  # a batch untimed, then A B B A
])
def test_the_work_one_sample_runs_follows_from_single_or_batched(name, cold, work):
    assert methods.named(name).work_per_sample(4, cold_cache=cold) == work


def test_a_graphs_window_is_led_by_a_longer_spin_and_the_hosts_clock_by_none():
    """A graph's replay launch must fit behind its spin (docs/decisions/process-offset.md); other methods take the
    config's lead; none on the host's clock or when the config turns the lead off."""
    graph = methods.CUDA_GRAPH
    assert graph.lead_us(100.0) == graph.min_lead_us == 1000.0 and graph.lead_us(5000.0) == 5000.0
    assert methods.CUDA_EVENT.lead_us(100.0) == methods.BATCHED_EVENTS.lead_us(100.0) == 100.0
    assert graph.lead_us(0.0) == 0.0 and methods.PERF_COUNTER.lead_us(100.0) == 0.0


def test_only_a_graphs_window_leaves_out_the_work_after_its_end():
    assert [m.name for m in methods.METHODS.values() if not m.counts_tail()] == ["cuda_graph"]


def test_each_methods_config_fields_exist():
    from harness.common.config import Resolution, Timing

    assert all(m.resolution_key in Resolution.__dataclass_fields__ for m in methods.METHODS.values())
    assert all(m.target_key in Timing.__dataclass_fields__ for m in methods.METHODS.values())


def test_a_name_the_timer_never_chooses_is_no_method():
    assert methods.named("unknown") is None and methods.named(None) is None and not methods.is_graph("unknown")
    assert methods.is_graph("cuda_graph") and not methods.is_graph("batched_events")


def test_the_timer_asks_the_methods_in_order_of_preference():
    """The first chosen times the call: the host's clock on the CPU; on a GPU a window per call for a long call, else
    a graph, else batched windows, which is always chosen; each file's method is listed once."""
    assert [m.name for m in methods.PREFERENCE] == ["perf_counter", "cuda_event", "cuda_graph", "batched_events"]
    assert list(methods.METHODS) == [m.name for m in methods.PREFERENCE]
