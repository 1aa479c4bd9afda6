"""How a run shares its files between worker processes."""

from __future__ import annotations

import heapq

from pinlint.runner import Job, _chunks
from pinlint.settings import Settings


def _jobs(tmp_path, sizes):
    jobs = []
    for index, size in enumerate(sizes):
        path = tmp_path / f"f{index:04d}.py"
        path.write_bytes(b"#" * size)
        jobs.append(Job(str(path), path.name, Settings()))
    return jobs


def _finish(chunks, sizes, workers):
    """Each worker takes the next run when it is free (as the pool does): when does each end?"""
    ends = [0.0] * workers
    heapq.heapify(ends)
    for chunk in chunks:
        heapq.heappush(ends, heapq.heappop(ends) + sum(sizes[i] for i in chunk))
    return sorted(ends)


def test_runs_are_contiguous_and_cover_every_job_once_in_order(tmp_path):
    sizes = [100 + (i * 37) % 900 for i in range(300)]
    chunks = _chunks(_jobs(tmp_path, sizes), 2)
    assert [i for chunk in chunks for i in chunk] == list(range(300))
    assert all(len(chunk) >= 1 for chunk in chunks)


def test_workers_finish_together_when_the_heavy_files_come_last(tmp_path):
    """cupy's tests: most of the bytes in the last third of the files. Runs of equal counts left
    one worker with 61% of the work; runs that shrink toward the end share it evenly."""
    sizes = [200] * 400 + [3_000] * 200
    chunks = _chunks(_jobs(tmp_path, sizes), 2)
    ends = _finish(chunks, sizes, 2)
    assert ends[-1] / sum(sizes) < 0.53, ends
    equal_counts = [range(i, min(i + 64, len(sizes))) for i in range(0, len(sizes), 64)]
    assert _finish(equal_counts, sizes, 2)[-1] / sum(sizes) > 0.55  # what the test guards against


def test_the_first_runs_are_large_so_neighbouring_files_stay_together(tmp_path):
    sizes = [1_000] * 512
    chunks = _chunks(_jobs(tmp_path, sizes), 2)
    assert len(chunks[0]) >= len(sizes) // 5
    assert len(chunks) < 40
