#!/usr/bin/env python3
"""Draws a peers.py run side by side: each throughput figure of every engine (prefill, decode at
each batch, serving output tokens/s at each stream count), and weft's ratio to the best peer.

Usage:  plot_peers.py RESULTS.json OUT.png     (peers.py runs it after every run)

RESULTS.json is what peers.py wrote beside its table: "args" (model, weights, threads, rounds,
stat) and "results", metric -> engine -> one value per round (a number of tokens/s; for
"serve N" a dict with output_tok_s; "peak RSS MB" in MB). The figure uses the run's own statistic
(--stat median or best), as the table does. Needs matplotlib (Debian: python3-matplotlib).
"""
import json
import statistics
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot_peers.py: matplotlib is not installed for %s (Debian: apt-get install python3-matplotlib)"
             % sys.executable)
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ENGINE_COLORS = {"llama.cpp": "tab:orange", "vllm": "tab:purple", "weft": "tab:blue"}


def figure_value(values, stat):
    """The run's statistic over the rounds that produced a value, or None when none did."""
    xs = [v["output_tok_s"] if isinstance(v, dict) else v for v in values if v is not None]
    if not xs:
        return None
    return max(xs) if stat == "best" else statistics.median(xs)


def throughput_rows(results, stat):
    """(label, {engine: tok/s}) for every throughput metric, in the table's order."""
    rows = []
    for metric, by_engine in results.items():
        if metric.startswith("_") or metric == "peak RSS MB":
            continue
        label = metric.replace(" tok/s", "")
        if metric.startswith("serve "):
            label = "serving, %s streams" % metric.split()[1]
        rows.append((label, {e: figure_value(v, stat) for e, v in by_engine.items()}))
    return rows


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        run = json.load(f)
    args = run["args"]
    rows = throughput_rows(run["results"], args.get("stat", "median"))
    if not rows:
        sys.exit("plot_peers.py: no throughput figures in " + sys.argv[1])
    engines = [e for e in ENGINE_COLORS if any(e in values for _, values in rows)]

    fig, (ax, rx) = plt.subplots(1, 2, figsize=(13, 0.55 * len(rows) + 2.2), constrained_layout=True,
                                 gridspec_kw={"width_ratios": [3, 2]})
    height = 0.8 / len(engines)
    for i, engine in enumerate(engines):
        ys = [r - 0.4 + height * (i + 0.5) for r in range(len(rows))]
        xs = [values.get(engine) or 0 for _, values in rows]
        ax.barh(ys, xs, height=height, color=ENGINE_COLORS[engine], label=engine)
        for y, x in zip(ys, xs):
            if x:
                ax.text(x, y, " %.0f" % x, va="center", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("tokens / s (log scale; higher is better)")
    ax.set_title("throughput, %s of %d round(s)" % (args.get("stat", "median"), args.get("rounds", 1)))
    ax.legend(loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)

    ratios = []
    for _, values in rows:
        peers = [v for e, v in values.items() if e != "weft" and v]
        ratios.append(values["weft"] / max(peers) if values.get("weft") and peers else 0)
    rx.barh(range(len(rows)), ratios, color=["tab:green" if r >= 1 else "tab:red" for r in ratios])
    for y, r in enumerate(ratios):
        rx.text(r, y, " %.2fx" % r if r else " (missing)", va="center", fontsize=8)
    rx.axvline(1.0, color="black", linewidth=1)
    rx.set_yticks(range(len(rows)))
    rx.set_yticklabels([])
    rx.invert_yaxis()
    rx.set_xlim(0, max(1.3, 1.15 * max(ratios)))
    rx.set_xlabel("weft / fastest peer")
    rx.set_title("ratio")
    rx.grid(True, axis="x", alpha=0.3)

    weft_args = " ".join(args.get("weft_arg") or [])
    fig.suptitle("weft vs peers: %s, %s weights, %d threads%s\n%s" % (
        args.get("model"), str(args.get("weights", "bf16")).upper(), args.get("threads", 0),
        ("; weft " + weft_args) if weft_args else "", run.get("weft_info", {}).get("cpu", "")), fontsize=9)
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
