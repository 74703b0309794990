"""A sweep as shards on a Dask cluster, merged back into the single run's results (bit for bit):

    pip install "dask[distributed]"
    python examples/dask_shards.py

A LocalCluster here; point ``Client`` at a scheduler's address to use many machines (each
worker needs the tailor package installed).
"""

import tailor
from dask.distributed import Client, LocalCluster

def shard(i, n=4):
    return tailor.sim("c3", shard=(i, n), requests=30_000, seeds=[1], selectors=["c3", "lor"],
                      set={"workload.warmup_ms": 100.0}, progress=False).json

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, Client(cluster) as client:
        futures = [client.submit(shard, i) for i in range(4)]
        merged = tailor.merge(*[tailor.Shard(t) for t in client.gather(futures)])
    whole = tailor.sim("c3", requests=30_000, seeds=[1], selectors=["c3", "lor"], set={"workload.warmup_ms": 100.0}, progress=False)
    print("dask shards merged == single run:", merged.json == whole.json, len(merged.runs), "runs")
