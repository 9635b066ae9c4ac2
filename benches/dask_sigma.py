#!/usr/bin/env python3
"""Chunked arrays at growing sigma: gblur.dask against dask_image.ndfilters.gaussian_filter on a
Dask LocalCluster of worker processes, the same random float32 volume in the same chunks for
both, mode reflect. Each (tool, sigma) runs on a fresh cluster, so that the peak resident memory
its workers report (getrusage's ru_maxrss, the largest of the workers) is that run's; the
result is reduced on the workers (its sum), so that only the filter and Dask's own traffic
are timed. Rounds alternate the tools' order; a peer run that passes --peer-limit seconds is
stopped and reported as such.

usage: dask_sigma.py [--shape 1024,1024,256] [--chunks 128] [--sigmas 2,10,40] [--rounds 3]
                     [--workers 2] [--peer-limit 600] [--peer-rounds 1]
"""
import argparse
import multiprocessing
import resource
import statistics
import time

import numpy as np


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(tool, shape, chunks, sigma, workers, queue):
    """One timed run on a cluster of its own; puts (seconds, peak worker MiB) on `queue`, or
    (None, the error) where the tool fails."""
    try:
        queue.put(run_on_cluster(tool, shape, chunks, sigma, workers))
    except Exception as e:  # the peer's failure is a result to report
        queue.put((None, f"{type(e).__name__}: {e}"))


def run_on_cluster(tool, shape, chunks, sigma, workers):
    import dask.array as da
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        x = da.random.default_rng(1).random(shape, dtype=np.float32, chunks=chunks).persist()
        client.wait_for_workers(workers)
        from distributed import wait
        wait(x)
        if tool == "gblur":
            import gblur.dask
            y = gblur.dask.gaussian_filter(x, sigma, mode="reflect")
        else:
            import dask_image.ndfilters
            y = dask_image.ndfilters.gaussian_filter(x, sigma, mode="reflect")
        t = time.perf_counter()
        y.sum().compute()
        seconds = time.perf_counter() - t
        peak = max(client.run(peak_rss_mib).values())
    return seconds, peak


def timed(tool, shape, chunks, sigma, workers, limit):
    """(seconds, peak MiB); (None, None) where the run passed `limit` seconds; (None, error)
    where it failed."""
    queue = multiprocessing.Queue()
    p = multiprocessing.Process(target=run, args=(tool, shape, chunks, sigma, workers, queue))
    p.start()
    p.join(limit)
    if p.is_alive():
        p.kill()
        p.join()
        return None, None
    return queue.get() if not queue.empty() else (None, None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="1024,1024,256")
    ap.add_argument("--chunks", type=int, default=128)
    ap.add_argument("--sigmas", default="2,10,40")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peer-rounds", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--peer-limit", type=float, default=600)
    args = ap.parse_args()
    shape = tuple(int(v) for v in args.shape.split(","))
    sigmas = [float(s) for s in args.sigmas.split(",")]
    print(f"{'x'.join(map(str, shape))} float32 in {args.chunks}-chunks, {args.workers} worker "
          f"processes of 1 thread, mode reflect; gblur {args.rounds} rounds, dask-image "
          f"{args.peer_rounds}, stopped after {args.peer_limit:.0f} s", flush=True)
    results = {}
    for r in range(max(args.rounds, args.peer_rounds)):
        tools = ["gblur", "dask-image"] if r % 2 == 0 else ["dask-image", "gblur"]
        for sigma in sigmas:
            for tool in tools:
                rounds = args.rounds if tool == "gblur" else args.peer_rounds
                if r >= rounds:
                    continue
                limit = args.peer_limit if tool == "dask-image" else 3600
                s, peak = timed(tool, shape, args.chunks, sigma, args.workers, limit)
                results.setdefault((tool, sigma), []).append((s, peak))
                if s is not None:
                    shown = f"{s:.2f} s, peak {peak:.0f} MiB"
                else:
                    shown = f"fails: {peak}" if peak else f"stopped after {limit:.0f} s"
                print(f"  round {r + 1} {tool} sigma {sigma:g}: {shown}", flush=True)
    print("\n| sigma | gblur.dask | peak worker memory | dask-image | peak worker memory | dask-image ÷ gblur |")
    print("|---|---|---|---|---|---|")
    for sigma in sigmas:
        row = [f"{sigma:g}"]
        medians = {}
        for tool in ("gblur", "dask-image"):
            runs = results.get((tool, sigma), [])
            done = [x for x in runs if x[0] is not None]
            if done and len(done) == len(runs):
                medians[tool] = statistics.median(s for s, _ in done)
                row += [f"{medians[tool]:.2f} s", f"{max(p for _, p in done):.0f} MiB"]
            elif any(isinstance(p, str) for _, p in runs):
                row += ["fails (" + next(p for _, p in runs if isinstance(p, str)).split(":")[0]
                        + ")", "—"]
            else:
                row += [f"> {args.peer_limit:.0f} s (stopped)", "—"]
        if len(medians) == 2:
            row.append(f"{medians['dask-image'] / medians['gblur']:.1f}×")
        elif "gblur" in medians and row[3].startswith(">"):
            row.append(f"> {args.peer_limit / medians['gblur']:.0f}×")
        else:
            row.append("—")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
