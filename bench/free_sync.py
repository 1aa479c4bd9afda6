"""Does freeing device memory, or unregistering host memory, wait for copies still queued on a stream?

PIN005 asks whether a host read can see a non-blocking device-to-host copy unfinished. If a free of
device memory waits for the whole device, a function that queues copies and returns, dropping its last
reference to a device allocation, has synchronized before its caller reads. Whether it does depends on
the library's allocator (a pool does not free at all). This script measures it on the GPU, one library
per process:

    python bench/free_sync.py            # every library it can import, a table
    python bench/free_sync.py pycuda     # one library, one JSON line per case

For each case the stream is made busy for about 200 ms with pinned device-to-host copies of a
256 MiB buffer, then the operation under test runs; the script records how long the host was held in
it and whether the stream had finished right after it. "control" does nothing in between: the stream
must still be busy there, or the measurement says nothing.
"""

import json
import subprocess
import sys
import time

MIB = 1 << 20
SIZE = 256 * MIB
COPIES = 40  # about 190 ms at 55 GB/s


def _case(name, queue, done, operation):
    """Queue the copies, run `operation`, report the time it held the host and whether `done()`."""
    queue()
    t0 = time.perf_counter()
    operation()
    held = (time.perf_counter() - t0) * 1e3
    finished = done()
    return {"case": name, "held_ms": round(held, 2), "stream_done_after": finished}


def run_pycuda():
    import numpy as np
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv

    stream = drv.Stream()
    host = drv.pagelocked_empty(SIZE, np.uint8)
    results = []

    def fresh():
        return drv.mem_alloc(SIZE)

    def queue_from(src):
        return lambda: [drv.memcpy_dtoh_async(host, src, stream) for _ in range(COPIES)]

    def finish():
        stream.synchronize()

    src = fresh()
    results.append(_case("control (no call)", queue_from(src), stream.is_done, lambda: None))
    finish()
    results.append(_case("free() of the copies' source", queue_from(src), stream.is_done, src.free))
    finish()
    src, other = fresh(), fresh()
    results.append(_case("free() of another allocation", queue_from(src), stream.is_done, other.free))
    finish()
    other = fresh()

    def drop():
        nonlocal other
        other = None  # the last reference: DeviceAllocation's destructor frees it

    results.append(_case("last reference dropped (another allocation)", queue_from(src), stream.is_done, drop))
    finish()

    # Unregistering host memory with a copy into it still queued (cuda-python's case below measures
    # cudaHostUnregister where PyCUDA 2026.1's register_host_memory raises on this image).
    pageable = drv.aligned_empty(SIZE, np.uint8, alignment=4096)
    try:
        registered = drv.register_host_memory(pageable)
    except Exception as exc:  # noqa: BLE001 - reported, not hidden
        results.append({"case": "unregister the copies' destination", "held_ms": None,
                        "stream_done_after": f"not run: register_host_memory raised {type(exc).__name__}"})
        return results

    def queue_into_registered():
        for _ in range(COPIES):
            drv.memcpy_dtoh_async(registered, src, stream)

    results.append(_case("unregister the copies' destination", queue_into_registered, stream.is_done,
                         registered.base.unregister))
    finish()
    return results


def run_cuda_python():
    import numpy as np
    try:
        from cuda.bindings import runtime as rt
    except ImportError:  # cuda-python before cuda-bindings 12.6
        from cuda import cudart as rt

    def check(result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RuntimeError(f"CUDA error {err}")
        return rest[0] if rest else None

    stream = check(rt.cudaStreamCreate())
    host = check(rt.cudaMallocHost(SIZE))
    d2h = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost

    def queue_from(src, dst=host):
        return lambda: [check(rt.cudaMemcpyAsync(dst, src, SIZE, d2h, stream)) for _ in range(COPIES)]

    def done():
        return int(rt.cudaStreamQuery(stream)[0]) == 0

    def finish():
        check(rt.cudaStreamSynchronize(stream))

    results = []
    src = check(rt.cudaMalloc(SIZE))
    results.append(_case("control (no call)", queue_from(src), done, lambda: None))
    finish()
    other = check(rt.cudaMalloc(SIZE))
    results.append(_case("cudaFree of another allocation", queue_from(src), done,
                         lambda: check(rt.cudaFree(other))))
    finish()
    results.append(_case("cudaFree of the copies' source", queue_from(src), done,
                         lambda: check(rt.cudaFree(src))))
    finish()
    src = check(rt.cudaMalloc(SIZE))
    other = check(rt.cudaMallocAsync(SIZE, stream))
    finish()
    results.append(_case("cudaFreeAsync of another allocation (control)", queue_from(src), done,
                         lambda: check(rt.cudaFreeAsync(other, stream))))
    finish()
    pageable = np.empty(SIZE, np.uint8)
    ptr = pageable.ctypes.data
    check(rt.cudaHostRegister(ptr, SIZE, 0))
    results.append(_case("cudaHostUnregister of the copies' destination", queue_from(src, ptr), done,
                         lambda: check(rt.cudaHostUnregister(ptr))))
    finish()
    return results


def run_cupy():
    import cupy as cp
    import cupyx

    stream = cp.cuda.Stream(non_blocking=True)
    host = cupyx.empty_pinned(SIZE, cp.uint8)
    pool = cp.get_default_memory_pool()
    results = []

    def queue_from(src):
        return lambda: [src.get(stream=stream, out=host, blocking=False) for _ in range(COPIES)]

    src = cp.zeros(SIZE, cp.uint8)
    results.append(_case("control (no call)", queue_from(src), lambda: stream.done, lambda: None))
    stream.synchronize()
    other = cp.zeros(SIZE, cp.uint8)

    def drop():
        nonlocal other
        other = None  # back to CuPy's pool, not to the driver

    results.append(_case("last reference dropped (pool)", queue_from(src), lambda: stream.done, drop))
    stream.synchronize()
    results.append(_case("pool.free_all_blocks() (cudaFree)", queue_from(src), lambda: stream.done,
                         pool.free_all_blocks))
    stream.synchronize()
    return results


def run_numba():
    import numpy as np
    from numba import cuda

    stream = cuda.stream()
    host = cuda.pinned_array(SIZE, np.uint8)
    results = []

    event = cuda.event()

    def queue_from(src):
        def queue():
            for _ in range(COPIES):
                src.copy_to_host(host, stream=stream)
            event.record(stream)
        return queue

    def done():
        return bool(event.query())

    src = cuda.device_array(SIZE, np.uint8)
    results.append(_case("control (no call)", queue_from(src), done, lambda: None))
    stream.synchronize()
    other = cuda.device_array(SIZE, np.uint8)

    def drop():
        nonlocal other
        other = None  # Numba defers the free to its pending-deallocations list

    pending = cuda.current_context().deallocations
    results.append(_case("last reference dropped (deferred)", queue_from(src), done, drop))
    results[-1]["case"] += f", {len(pending._cons)} pending after"
    stream.synchronize()
    results.append(_case("deallocations.clear() (cuMemFree)", queue_from(src), done,
                         cuda.current_context().deallocations.clear))
    stream.synchronize()

    # `with cuda.pinned(a):` page-locks `a` for the block; its end unregisters it (Numba's pin
    # finalizer runs at once, bypassing the deferred deallocations) with copies into `a` still queued.
    pageable = np.empty(SIZE, np.uint8)
    block = cuda.pinned(pageable)
    block.__enter__()
    for _ in range(COPIES):
        src.copy_to_host(pageable, stream=stream)
    event.record(stream)
    results.append(_case("end of `with cuda.pinned(a)` with copies into `a` queued", lambda: None, done,
                         lambda: block.__exit__(None, None, None)))
    stream.synchronize()
    return results


def run_torch():
    import torch

    stream = torch.cuda.Stream()
    host = torch.empty(SIZE, dtype=torch.uint8, pin_memory=True)
    results = []

    def queue_from(src):
        def queue():
            with torch.cuda.stream(stream):
                for _ in range(COPIES):
                    host.copy_(src, non_blocking=True)
        return queue

    src = torch.zeros(SIZE, dtype=torch.uint8, device="cuda")
    results.append(_case("control (no call)", queue_from(src), stream.query, lambda: None))
    stream.synchronize()
    other = torch.zeros(SIZE, dtype=torch.uint8, device="cuda")

    def drop():
        nonlocal other
        other = None  # back to the caching allocator

    results.append(_case("last reference dropped (caching allocator)", queue_from(src), stream.query, drop))
    stream.synchronize()
    results.append(_case("torch.cuda.empty_cache() (cudaFree)", queue_from(src), stream.query,
                         torch.cuda.empty_cache))
    stream.synchronize()
    return results


LIBRARIES = {"pycuda": run_pycuda, "cuda-python": run_cuda_python, "cupy": run_cupy, "numba": run_numba,
             "torch": run_torch}


def main(argv):
    if argv:
        for row in LIBRARIES[argv[0]]():
            print(json.dumps({"library": argv[0], **row}), flush=True)
        return 0
    print("| library | operation after queuing ~190 ms of D2H copies | host held (ms) | stream done after |")
    print("|---|---|---|---|")
    for library in LIBRARIES:
        proc = subprocess.run([sys.executable, __file__, library], check=False, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"| {library} | not run: {last} | | |")
            continue
        for line in proc.stdout.splitlines():
            row = json.loads(line)
            print(f"| {library} | {row['case']} | {row['held_ms']} | {row['stream_done_after']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
