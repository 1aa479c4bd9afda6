"""Is a non-contiguous view of pinned memory copied to the GPU asynchronously by PyTorch?

PIN001 reports `pinned.T.to("cuda", non_blocking=True)`: ATen's CUDA copy first makes the source
contiguous, a new pageable CPU tensor, so the call should hold the host like a pageable copy, and the
pinned memory should be free to rewrite as soon as the call returns (no race for PIN006). This script
measures both on the GPU, side by side in one process:

    python bench/noncontiguous_pinned.py      # one JSON line per case, then a table

Each case queues about 200 ms of GPU work on the current stream first, then times the host inside the
copy call. "pinned" must return at once (the copy waits on the stream) and "pageable" is the
reference for a staged copy. After the call the source is overwritten, the stream synchronized, and
the GPU's copy compared with the values the source held at the call ("kept": the copy is of the
values at the call, so rewriting the source could not change it).
"""

import json
import time

N = 8192  # 8192 x 8192 float32: 256 MiB


def main() -> None:
    import torch

    assert torch.cuda.is_available(), "needs a CUDA GPU"
    a = torch.randn(N, N, device="cuda")
    busy = lambda: [a.mul_(1.0000001) for _ in range(int(_iterations_for(torch, a, 0.2)))]  # noqa: E731
    pinned = torch.empty(N, N, pin_memory=True)
    pageable = torch.empty(N, N)
    dst = torch.empty(N, N, device="cuda")
    # (name, source view, the copy): each copy is asked to be non-blocking
    cases = [
        ("pinned .to", lambda: pinned, lambda s: s.to("cuda", non_blocking=True)),
        ("pinned.T .to (dense, permuted)", lambda: pinned.T, lambda s: s.to("cuda", non_blocking=True)),
        ("pinned.permute(1, 0) .cuda", lambda: pinned.permute(1, 0), lambda s: s.cuda(non_blocking=True)),
        ("pinned.T .to(dtype=float16)", lambda: pinned.T,
         lambda s: s.to("cuda", dtype=torch.float16, non_blocking=True)),
        ("pinned .to(dtype=float16)", lambda: pinned, lambda s: s.to("cuda", dtype=torch.float16, non_blocking=True)),
        ("dst.copy_(pinned.T)", lambda: pinned.T, lambda s: dst.copy_(s, non_blocking=True)),
        ("dst.copy_(pinned)", lambda: pinned, lambda s: dst.copy_(s, non_blocking=True)),
        ("pinned[:, :N/2] .to (not dense)", lambda: pinned[:, : N // 2], lambda s: s.to("cuda", non_blocking=True)),
        ("pageable .to", lambda: pageable, lambda s: s.to("cuda", non_blocking=True)),
    ]
    rows = []
    for name, source, copy in cases:
        for buffer in (pinned, pageable):
            buffer.fill_(1.0)
        src = source()
        expected = src.clone()  # the values at the call
        torch.cuda.synchronize()
        busy()
        t0 = time.perf_counter()
        d = copy(src)
        held = (time.perf_counter() - t0) * 1e3
        queued = not torch.cuda.current_stream().query()
        src.fill_(2.0)  # rewrite the source while the copy may still be queued
        torch.cuda.synchronize()
        kept = bool(torch.equal(d.float().cpu(), expected.float()))
        row = {"case": name, "contiguous": src.is_contiguous(), "held_ms": round(held, 2),
               "stream_busy_after_call": queued, "copy_kept_values_at_call": kept}
        rows.append(row)
        print(json.dumps(row))
    print(f"\n{'case':40} {'contiguous':>10} {'held ms':>8} {'busy after':>10} {'kept':>5}")
    for r in rows:
        print(f"{r['case']:40} {str(r['contiguous']):>10} {r['held_ms']:8.2f} {str(r['stream_busy_after_call']):>10} "
              f"{str(r['copy_kept_values_at_call']):>5}")
    print(f"\ntorch {torch.__version__}, {torch.cuda.get_device_name()}")


def _iterations_for(torch, a, seconds: float) -> float:
    """How many in-place multiplications of ``a`` take about ``seconds`` on the GPU."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        a.mul_(1.0000001)
    torch.cuda.synchronize()
    return max(1.0, seconds / ((time.perf_counter() - t0) / 20))


if __name__ == "__main__":
    main()
