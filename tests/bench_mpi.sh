#!/bin/sh
# make bench (where mpicc is): shared loading on one machine. 1, 2 and 4 ranks load a 128 MB
# checkpoint (4 shards + index) each alone and with --share, from the page cache (warm) and
# after dropping it (cold: posix_fadvise DONTNEED, no root needed): the storage bytes the ranks
# read between them and the wall time of the slowest rank.
# On one machine the "interconnect" is shared memory and every rank's page cache is the same,
# so warm runs show the cost of the extra copies, not a win; cold runs show the storage read
# once instead of N times, the figure that matters for N machines on shared storage.
# usage: tests/bench_mpi.sh build/safeload_mpi [MB]
set -u
MPI=$1
MB=${2:-128}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ROOT=
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
MPIRUN="mpirun $ROOT --oversubscribe --bind-to none --mca plm_rsh_agent false"
python3 - "$T" "$MB" <<'PY'
import json, os, struct, sys
d, mb = sys.argv[1], int(sys.argv[2])
wm = {}
per = mb // 4
for s in range(4):
    name = "model-%05d-of-00004.safetensors" % (s + 1)
    hdr, off, blobs = {}, 0, []
    for i in range(per):                    # 1 MiB BF16 tensors [512, 1024]
        n = "model.layers.%d.mlp.experts.%d.weight" % (s, i)
        b = os.urandom(1 << 20)
        hdr[n] = {"dtype": "BF16", "shape": [512, 1024], "data_offsets": [off, off + len(b)]}
        off += len(b); blobs.append(b); wm[n] = name
    h = json.dumps(hdr, separators=(",", ":")).encode(); h += b" " * (-len(h) % 8)
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs: f.write(b)
json.dump({"metadata": {}, "weight_map": wm}, open(os.path.join(d, "model.safetensors.index.json"), "w"))
PY
IDX=$T/model.safetensors.index.json
drop() {
    python3 -c '
import os, sys, glob
for f in glob.glob(sys.argv[1] + "/*.safetensors"):
    fd = os.open(f, os.O_RDONLY); os.fsync(fd) if False else None
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$T"
}
echo "bench_mpi: $MB MB checkpoint (4 shards), $(nproc) cores; wall = the slowest rank's load"
printf '%-6s %-6s %-8s %12s %10s %10s\n' ranks cache mode "read (MB)" "wall (s)" "GB/s/rank"
for np in 1 2 4; do
    for cache in warm cold; do
        for mode in alone --share; do
            [ $np = 1 ] && [ "$mode" = --share ] && continue
            if [ $cache = warm ]; then cat "$T"/*.safetensors > /dev/null; else drop; fi
            out=$($MPIRUN -np $np "$MPI" "$IDX" --threads 2 $( [ "$mode" = --share ] && echo --share) 2>&1) ||
                { echo "bench_mpi: np $np $mode failed"; printf '%s\n' "$out"; exit 1; }
            printf '%s\n' "$out" | awk -v np=$np -v cache=$cache -v mode=${mode#--} '
                / read: / { for (i = 1; i <= NF; i++) { if ($i == "in") t = $(i + 1); if ($i == "read:") r += $(i + 1); if ($i == "tensors,") b = $(i + 1) }
                            if (t > w) w = t }
                END { printf "%-6d %-6s %-8s %12.1f %10.3f %10.2f\n", np, cache, mode, r / 1e6, w, b / 1e9 / (w > 0 ? w : 1e-9) }'
        done
    done
done
