"""The recorder without CUPTI: API callbacks and activity records shaped as CUPTI delivers them,
joined into events; attribution of each call to the user's line."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from trace_helpers import Feed

from pinlint.trace.aggregate import Aggregator
from pinlint.trace.events import UNATTRIBUTED, Copy, HostAlloc, HostFree
from pinlint.trace.frames import Attributor
from pinlint.trace.recorder import classify


class Events:
    def __init__(self) -> None:
        self.items: list = []

    def add(self, event) -> None:
        self.items.append(event)

    def of(self, kind) -> list:
        return [e for e in self.items if isinstance(e, kind)]


def test_a_copy_joins_its_call_and_its_record_by_correlation_id():
    feed = Feed(Events())
    line = sys._getframe().f_lineno + 1
    correlation = feed.call("cuMemcpyHtoDAsync_v2", SimpleNamespace(src_host=0xABC, h_stream=0x77), held_ns=42_000)
    assert feed.sink.items == []  # nothing until the activity record arrives
    feed.record(correlation, "h2d", host_kind=1, nbytes=4096, device_ns=2000, stream=13)
    (event,) = feed.sink.of(Copy)
    assert (event.site.filename, event.site.line, event.site.function) == (__file__, line, sys._getframe().f_code.co_name)
    assert (event.direction, event.host_kind, event.nbytes, event.device_ns, event.host_ns) == ("h2d", "pageable", 4096,
                                                                                              2000, 42_000)
    assert event.asynchronous and event.host_ptr == 0xABC and event.stream == 13


def test_a_record_that_arrives_before_its_call_ends_still_joins():
    feed = Feed(Events())
    data = SimpleNamespace(callback_site=0, function_name="cuMemcpyDtoHAsync_v2", correlation_id=99,
                           function_params=0, function_return_value=0)
    feed.recorder.on_api(data, sys._getframe())
    feed.record(99, "d2h", host_kind=2)
    assert feed.sink.items == []
    data.callback_site = 1
    feed.recorder.on_api(data, sys._getframe())
    (event,) = feed.sink.of(Copy)
    assert event.host_kind == "pinned" and event.direction == "d2h" and event.site.user


def test_records_without_a_call_are_unattributed_and_device_copies_are_only_counted():
    feed = Feed(Events())
    feed.record(1234, "h2d")
    assert feed.sink.of(Copy)[0].site == UNATTRIBUTED
    correlation = feed.call("cuMemcpyAsync", SimpleNamespace(src=1, dst=2, h_stream=5))
    feed.recorder.on_activity(SimpleNamespace(kind=1, correlation_id=correlation, copy_kind=8, src_kind=3,
                                              dst_kind=3, bytes=1, start=0, end=1, stream_id=1))
    assert len(feed.sink.of(Copy)) == 1 and feed.recorder.counts["device-to-device and other copies"] == 1


def test_a_failed_call_is_not_an_event():
    feed = Feed(Events())
    correlation = feed.call("cuMemcpyHtoDAsync_v2", SimpleNamespace(src_host=1, h_stream=5), failed=True)
    feed.record(correlation)
    assert feed.recorder.counts["failed calls"] == 1
    assert feed.sink.of(Copy)[0].site == UNATTRIBUTED  # its record, if any, has no call to join


def _library_call(feed, *names):
    """One call into a library that makes several driver calls (CuPy's ``get()`` copies and then
    synchronizes): CUPTI sees each with the caller's frame at the same instruction."""
    caller = sys._getframe(1)
    return [feed.call(name, SimpleNamespace(dst_host=1, h_stream=5), frame=caller) for name in names]


def _copy_then_sync(feed, same_call: bool):
    if same_call:
        return _library_call(feed, "cuMemcpyDtoHAsync_v2", "cuStreamSynchronize")[0]
    correlation = _library_call(feed, "cuMemcpyDtoHAsync_v2")[0]
    _library_call(feed, "cuStreamSynchronize")  # the program's own synchronize, on its next line
    return correlation


def test_a_synchronize_inside_the_same_call_makes_the_copy_blocking():
    feed = Feed(Events())
    feed.record(_copy_then_sync(feed, same_call=True), "d2h")
    feed.record(_copy_then_sync(feed, same_call=False), "d2h")
    blocking, separate = feed.sink.of(Copy)
    assert blocking.blocking and not blocking.asynchronous
    assert not separate.blocking and separate.asynchronous


def test_a_copy_on_the_default_stream_is_marked_and_still_asynchronous():
    feed = Feed(Events())
    for stream in (0, 1, 2, 0x7F00):
        feed.record(feed.call("cuMemcpyHtoDAsync_v2", SimpleNamespace(src_host=1, h_stream=stream)))
    assert [e.default_stream for e in feed.sink.of(Copy)] == [True, True, True, False]
    assert all(e.asynchronous for e in feed.sink.of(Copy))  # torch's non_blocking=True runs there


def test_pinned_allocations_registrations_and_frees():
    feed = Feed(Events())
    feed.memory.pointers[0xBEEF] = 0x7000_0000
    feed.call("cuMemHostAlloc", SimpleNamespace(bytesize=1 << 20, flags_=4, pp=0xBEEF), held_ns=5_000_000)
    feed.call("cuMemHostRegister_v2", SimpleNamespace(bytesize=4096, flags_=2, p=0x9000))
    feed.call("cuMemFreeHost", SimpleNamespace(p=0x7000_0000), held_ns=700)
    alloc, registered = feed.sink.of(HostAlloc)
    assert (alloc.nbytes, alloc.flags, alloc.ptr, alloc.host_ns, alloc.registered) == (1 << 20, 4, 0x7000_0000,
                                                                                      5_000_000, False)
    assert registered.registered and registered.ptr == 0x9000 and registered.flags == 2
    (freed,) = feed.sink.of(HostFree)
    assert freed.ptr == 0x7000_0000 and freed.host_ns == 700


def test_a_call_that_does_not_matter_is_ignored():
    assert classify("cuLaunchKernel") is None and classify("cuMemcpyHtoD_v2") == "copy"
    assert classify("cuMemAllocHost_v2") == "alloc" and classify("cuStreamSynchronize") == "sync"
    feed = Feed(Events())
    feed.call("cuLaunchKernel")
    assert feed.sink.items == [] and not feed.recorder._entered


def test_the_waiting_list_is_bounded_with_a_count_of_what_was_dropped():
    feed = Feed(Events())
    feed.recorder.max_waiting = 3
    ids = [feed.call("cuMemcpyHtoDAsync_v2", SimpleNamespace(src_host=1, h_stream=5)) for _ in range(5)]
    assert len(feed.recorder._waiting) == 3
    assert feed.recorder.counts["copies whose record never came (cap reached)"] == 2
    feed.record(ids[-1])
    feed.recorder.finish()
    assert feed.recorder.counts["copies whose record never came"] == 2
    assert len(feed.sink.of(Copy)) == 1


def test_an_exception_inside_a_callback_is_counted_not_raised():
    feed = Feed(Events())
    feed.recorder.guarded(feed.recorder.on_activity, SimpleNamespace())  # no fields at all
    assert sum(feed.recorder.errors.values()) == 1 and "AttributeError" in next(iter(feed.recorder.errors))


class _Runs:
    def __init__(self) -> None:
        self.n = 0

    def run_of(self, frame) -> int:
        self.n += 1
        return self.n


def test_each_event_carries_the_run_of_its_line():
    runs = _Runs()
    feed = Feed(Events(), line_runs=runs)
    for _ in range(2):
        feed.record(feed.call("cuMemcpyHtoDAsync_v2", SimpleNamespace(src_host=1, h_stream=5)))
    feed.memory.pointers[1] = 2
    feed.call("cuMemHostAlloc", SimpleNamespace(bytesize=1, flags_=0, pp=1))
    assert [e.run for e in feed.sink.items] == [1, 2, 3]


def test_the_recorder_tells_the_aggregate_which_pinned_buffer_a_copy_used_while_it_is_live():
    agg = Aggregator()
    feed = Feed(agg)
    feed.memory.pointers[0xBEEF] = 0x7000_0000
    feed.call("cuMemHostAlloc", SimpleNamespace(bytesize=1 << 20, flags_=0, pp=0xBEEF))
    correlation = feed.call("cuMemcpyHtoDAsync_v2", SimpleNamespace(src_host=0x7000_0100, h_stream=5))
    feed.call("cuMemFreeHost", SimpleNamespace(p=0x7000_0000))
    feed.record(correlation, host_kind=2)  # after the free: the count was taken at the call
    (line,) = agg.allocs.values()
    assert line.freed == 1 and dict(line.transfers) == {1: 1}


# ---------------------------------------------------------------------------- attribution
def _nested(attributor, depth: int):
    if depth:
        return _nested(attributor, depth - 1)
    return attributor.locate(sys._getframe())


def test_the_innermost_user_frame_is_the_line_and_outer_user_frames_are_callers():
    attributor = Attributor(roots=(), cwd="/")
    # Under pytest-xdist this process was started as `python -c ...`, which makes <string> frames the
    # user's (execnet's are on this stack); this test is about nesting, as in a program run from a file.
    attributor.pseudo = ()
    site, library, callers, frame = _nested(attributor, 2)
    assert site.filename == __file__ and site.function == "_nested" and site.user
    # Two more _nested frames, then this test; pytest's own frames are installed code, not callers.
    assert frame is not None and [c[0] for c in callers] == [__file__] * 3
    assert callers[-1][1] == sys._getframe().f_lineno - 4


def test_library_frames_are_skipped_and_name_the_library_called(tmp_path):
    library = tmp_path / "site-packages" / "somelib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("import sys\ndef copy():\n    return sys._getframe()\n")
    sys.path.insert(0, str(library.parent))
    try:
        import somelib
        frame = somelib.copy()
    finally:
        sys.path.remove(str(library.parent))
        sys.modules.pop("somelib", None)
    line = sys._getframe().f_lineno + 1  # where this frame is when the stack is walked
    site, package, _, _ = Attributor(roots=(), cwd="/").locate(frame)
    assert (site.filename, site.line, package) == (__file__, line, "somelib")


def test_folders_pip_installed_into_and_pinlint_itself_are_not_user_code(tmp_path, monkeypatch):
    target = tmp_path / "target"
    (target / "pkg-1.0.dist-info").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(target))
    from pinlint.trace.frames import library_roots
    roots = library_roots()
    attributor = Attributor(roots=roots, cwd="/")
    assert attributor.user_file(str(target / "pkg" / "mod.py")) is None
    import pinlint.trace.frames as frames_module
    assert attributor.user_file(frames_module.__file__) is None
    assert attributor.user_file(str(tmp_path / "project" / "train.py")) == str(tmp_path / "project" / "train.py")


def test_generated_code_is_user_code_only_when_the_program_is_python_c(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py"])
    assert Attributor(roots=(), cwd="/").user_file("<string>") is None  # dataclasses' generated methods
    monkeypatch.setattr(sys, "argv", ["-c"])
    assert Attributor(roots=(), cwd="/").user_file("<string>") == "<string>"
    assert Attributor(roots=(), cwd="/").user_file("<frozen runpy>") is None


def test_relative_code_paths_are_resolved_against_the_start_folder(tmp_path):
    attributor = Attributor(roots=(), cwd=str(tmp_path))
    assert attributor.user_file("train.py") == str(tmp_path / "train.py")
