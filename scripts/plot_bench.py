#!/usr/bin/env python3
"""Draws `weft bench --plot` data: decode and prefill throughput, decode step latency and the
decode bytes' fraction of the measured memory read bandwidth, each against batch size.

Usage:  plot_bench.py BENCH.json OUT.png     (weft bench --plot OUT.png runs it)

BENCH.json is what weft bench wrote: cpu, model, ranks, weight_bytes,
memory_read_bandwidth_bytes_per_s (null under mpirun), and rows of batch, prompt_len,
prefill_tokens_per_s, decode_tokens_per_s, decode_step_ms, bandwidth_fraction (null under mpirun).
Needs matplotlib (Debian: python3-matplotlib).
"""
import json
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot_bench.py: matplotlib is not installed for %s (Debian: apt-get install python3-matplotlib; "
             "or set WEFT_PYTHON to an interpreter that has it)" % sys.executable)
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        bench = json.load(f)
    rows = sorted(bench["rows"], key=lambda r: r["batch"])
    if not rows:
        sys.exit("plot_bench.py: no rows in " + sys.argv[1])
    batches = [r["batch"] for r in rows]
    fractions = [r["bandwidth_fraction"] for r in rows]
    panels = 3 if all(f is not None for f in fractions) else 2
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4.2), constrained_layout=True)

    ax = axes[0]
    ax.plot(batches, [r["decode_tokens_per_s"] for r in rows], "o-", label="decode")
    ax.plot(batches, [r["prefill_tokens_per_s"] for r in rows], "s--", label="prefill")
    ax.set_title("throughput")
    ax.set_ylabel("tokens / s")
    ax.legend()

    ax = axes[1]
    ax.plot(batches, [r["decode_step_ms"] for r in rows], "o-", color="tab:red")
    ax.set_title("decode step latency")
    ax.set_ylabel("ms per step")

    if panels == 3:
        ax = axes[2]
        ax.plot(batches, [100 * f for f in fractions], "o-", color="tab:green")
        ax.set_title("decode bytes / measured read bandwidth")
        ax.set_ylabel("%% of %.1f GB/s" % (bench["memory_read_bandwidth_bytes_per_s"] / 1e9))
        ax.set_ylim(0, max(100, 105 * max(fractions)))
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches)
        ax.set_xticklabels([str(b) for b in batches])
        ax.set_xlabel("batch size (sequences)")
        ax.grid(True, alpha=0.3)
    prompt = rows[0]["prompt_len"]
    fig.suptitle("weft bench: %s, %d rank(s), prompt %d tokens\n%s" % (bench["model"].rstrip("/").split("/")[-1],
                                                                        bench["ranks"], prompt, bench["cpu"]),
                 fontsize=9)
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
