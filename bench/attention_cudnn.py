#!/usr/bin/env python3
"""attention_cudnn.py — cuDNN (and FlashAttention-2) attention forward through torch SDPA, beside
xstage's kernel on the same shapes, in the same run.

For each shape: times torch.nn.functional.scaled_dot_product_attention with the cuDNN backend
and with the flash backend (median of 3 batches of back-to-back calls, CUDA events), then runs
`xstage bench attention ... --json` as a subprocess on the same GPU and prints both with the
ratio ours / cuDNN. FLOPs = 4 B H S Skv d, halved when causal (the same count on both sides).

  python3 bench/attention_cudnn.py [--bin build/xstage] [--version 2]
                                   [--shape B,H,S,d[,causal]]...   (default: the issue's shapes)
Needs torch with CUDA (the H200 image: /opt/torch/.venv/bin/python3).
"""
import argparse
import json
import subprocess
import sys
import time

DEFAULT_SHAPES = [  # (B, H, S, d, causal): DiT shapes (FLUX.1 1K/2K, Wan2.1 480p/720p), then d=64, causal
    (1, 24, 4608, 128, 0),
    (1, 24, 16896, 128, 0),
    (1, 40, 32760, 128, 0),
    (1, 5, 75600, 128, 0),
    (1, 24, 8192, 64, 0),
    (1, 24, 8192, 128, 1),
    (1, 24, 16896, 128, 1),  # causal at 132 tiles per head: the tile order's balance shows here
]


def parse_shape(text):
    parts = [int(x) for x in text.split(",")]
    if len(parts) not in (4, 5):
        raise argparse.ArgumentTypeError("shape is B,H,S,d[,causal]")
    return tuple(parts + [0] * (5 - len(parts)))


def time_sdpa(torch, backend, B, H, S, d, causal, budget_s=0.1):
    """Median ms of SDPA with one backend, or (None, reason)."""
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    try:
        with sdpa_kernel([backend]):
            for _ in range(2):
                F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            torch.cuda.synchronize()
            one = time.perf_counter() - t0
            # Back-to-back batches between two events, like xstage bench: host overhead overlaps.
            reps = max(1, min(50, int(budget_s / max(one, 1e-6))))
            times = []
            for _ in range(3):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(reps):
                    F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1) / reps)
        times.sort()
        return times[len(times) // 2], None
    except Exception as exc:  # an unsupported shape or backend: report, keep going
        return None, str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
    finally:
        del q, k, v
        torch.cuda.empty_cache()


def run_ours(binary, version, B, H, S, d, causal):
    cmd = [binary, "bench", "attention", "--B", str(B), "--H", str(H), "--S", str(S), "--d", str(d),
           "--hook", "none", "--json"]
    if version:
        cmd += ["--version", str(version)]
    if causal:
        cmd.append("--causal")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if p.stdout.strip().startswith("{"):
        try:
            data = json.loads(p.stdout.strip().splitlines()[-1])
            rows = data["rows"]
            best = max(rows, key=lambda r: r["tflops"])
            return best, None if p.returncode == 0 else "rc %d (wrong %d)" % (p.returncode, best["wrong"])
        except (ValueError, KeyError) as exc:
            return None, "bad JSON: %s" % exc
    return None, "rc %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1][:80])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/xstage", help="the xstage binary (default build/xstage)")
    ap.add_argument("--version", type=int, default=2, help="our version to run (0 = all; default 2)")
    ap.add_argument("--shape", type=parse_shape, action="append", help="B,H,S,d[,causal] (repeatable)")
    args = ap.parse_args()
    try:
        import torch
        from torch.nn.attention import SDPBackend
    except ImportError as exc:
        print("attention_cudnn.py: needs torch (%s)" % exc, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("attention_cudnn.py: no CUDA device", file=sys.stderr)
        return 2
    print("# %s, torch %s, cuDNN %s" % (torch.cuda.get_device_name(0), torch.__version__,
                                         torch.backends.cudnn.version()))
    hdr = "%-28s %9s %9s %9s %7s %7s  %s" % ("shape (B,H,S,d,causal)", "cuDNN", "flash", "ours", "ours/cu", "wrong", "notes")
    print(hdr)
    print("%-28s %9s %9s %9s" % ("", "TFLOP/s", "TFLOP/s", "TFLOP/s"))
    worst = None
    for (B, H, S, d, causal) in args.shape or DEFAULT_SHAPES:
        flops = 4.0 * B * H * S * S * d * (0.5 if causal else 1.0)
        notes = []
        ms_cu, err = time_sdpa(torch, SDPBackend.CUDNN_ATTENTION, B, H, S, d, causal)
        if err:
            notes.append("cudnn: " + err)
        ms_fa, err = time_sdpa(torch, SDPBackend.FLASH_ATTENTION, B, H, S, d, causal)
        if err:
            notes.append("flash: " + err)
        ours, err = run_ours(args.bin, args.version, B, H, S, d, causal)
        if err:
            notes.append("ours: " + err)
        tf_cu = flops / (ms_cu * 1e-3) / 1e12 if ms_cu else None
        tf_fa = flops / (ms_fa * 1e-3) / 1e12 if ms_fa else None
        tf_us = ours["tflops"] if ours else None
        ratio = tf_us / tf_cu if (tf_us and tf_cu) else None
        if ratio is not None and not causal and d == 128:
            worst = ratio if worst is None else min(worst, ratio)
        fmt = lambda x, f="%9.1f": (f % x) if x is not None else "%9s" % "-"
        print("%-28s %s %s %s %s %7s  %s" % (
            "%d,%d,%d,%d,%d" % (B, H, S, d, causal), fmt(tf_cu), fmt(tf_fa), fmt(tf_us),
            fmt(ratio, "%7.3f"), ours["wrong"] if ours else "-", "; ".join(notes)))
        sys.stdout.flush()
    if worst is not None:
        print("# worst ours/cuDNN over the non-causal d=128 shapes: %.3f (target >= 0.90)" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
