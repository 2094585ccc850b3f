#!/bin/sh
# make test-mpi: build/safeload_mpi under mpirun with 1, 2 and 4 ranks on a Llama-like
# checkpoint in two shards with an index, with and without --share and --tp. Every rank's
# checksum must be the CLI's (`safeload load --checksum`) or, with --tp, an independent one
# (python3 slicing the file bytes); with --share the ranks' `read:` must add up to the data.
# usage: tests/test_mpi.sh build/safeload_mpi build/safeload
set -u
MPI=$1
CLI=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
ROOT=
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
# a container has no ssh and often one core: no launch agent, no binding, oversubscribe
MPIRUN="mpirun $ROOT --oversubscribe --bind-to none --mca plm_rsh_agent false"

python3 - "$T" <<'PY'
import json, os, random, struct, sys
d = sys.argv[1]
random.seed(7)
H, F, V = 64, 160, 96
ts = [("model.embed_tokens.weight", "BF16", [V, H])]
for l in range(2):
    p = "model.layers.%d." % l
    ts += [(p + "input_layernorm.weight", "F32", [H])]
    ts += [(p + "self_attn.%s_proj.weight" % x, "BF16", [H, H]) for x in "qkvo"]
    ts += [(p + "mlp.gate_proj.weight", "BF16", [F, H]), (p + "mlp.up_proj.weight", "BF16", [F, H]),
           (p + "mlp.down_proj.weight", "BF16", [H, F])]
ts += [("model.norm.weight", "F32", [H]), ("lm_head.weight", "BF16", [V, H])]
size = {"BF16": 2, "F32": 4}
def data(dt, n):
    if dt == "F32":     # plausible values: no NaN
        return b"".join(struct.pack("<f", random.uniform(-1, 1)) for _ in range(n))
    return b"".join(struct.pack("<H", (0x3C00 + random.randrange(0x600)) ^ (random.randrange(2) << 15)) for _ in range(n))
halves = [ts[:9], ts[9:]]
wm = {}
for i, part in enumerate(halves):
    name = "model-%05d-of-00002.safetensors" % (i + 1)
    hdr, blob = {}, b""
    for (n, dt, shape) in part:
        cnt = 1
        for s in shape: cnt *= s
        b = data(dt, cnt)
        hdr[n] = {"dtype": dt, "shape": shape, "data_offsets": [len(blob), len(blob) + len(b)]}
        blob += b
        wm[n] = name
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    open(os.path.join(d, name), "wb").write(struct.pack("<Q", len(h)) + h + blob)
json.dump({"metadata": {}, "weight_map": wm}, open(os.path.join(d, "model.safetensors.index.json"), "w"))
PY
IDX=$T/model.safetensors.index.json
[ -f "$IDX" ] || { echo "test_mpi.sh: python3 could not write the checkpoint"; exit 1; }
DATA=$(python3 -c '
import json, struct, sys, glob
t = 0
for f in sorted(glob.glob(sys.argv[1] + "/*.safetensors")):
    b = open(f, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    t += len(b) - 8 - n
print(t)' "$T")

# --tp: rank r's shard of every split tensor, in the checkpoint's order (shards by file name,
# tensors by offset), FNV-1a 64 over the bytes
tp_sum() {  # ranks rank
    python3 - "$T" "$1" "$2" <<'PY'
import json, struct, sys, glob
d, N, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
h = 0xcbf29ce484222325
def fnv(b):
    global h
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
for f in sorted(glob.glob(d + "/*.safetensors")):
    b = open(f, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n]); base = 8 + n
    for name, t in sorted(((k, v) for k, v in hdr.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0]):
        a, e = t["data_offsets"]; raw = b[base + a: base + e]; shape = t["shape"]
        es = {"BF16": 2, "F32": 4}[t["dtype"]]
        dim = -1
        if len(shape) == 2 and any(name.endswith(".%s_proj.weight" % x) for x in ("q", "k", "v", "gate", "up")): dim = 0
        if len(shape) == 2 and any(name.endswith(".%s_proj.weight" % x) for x in ("o", "down")): dim = 1
        if dim < 0: fnv(raw); continue
        L = shape[dim]; lo, hi = L * r // N, L * (r + 1) // N
        if dim == 0:
            fnv(raw[lo * shape[1] * es: hi * shape[1] * es])
        else:
            for i in range(shape[0]):
                row = raw[i * shape[1] * es:(i + 1) * shape[1] * es]
                fnv(row[lo * es: hi * es])
print("%016x" % h)
PY
}

for dt in "" f32; do
    want=$("$CLI" load "$IDX" --checksum ${dt:+--dtype $dt} | sed -n 's/^checksum: //p')
    for np in 1 2 4; do
        for share in "" --share; do
            out=$($MPIRUN -np $np "$MPI" "$IDX" --checksum --threads 2 $share ${dt:+--dtype $dt} 2>"$T/err")
            rc=$?
            lines=$(printf '%s\n' "$out" | grep -c "^rank .*/$np: .* checksum: $want read: ")
            if [ $rc != 0 ] || [ "$lines" != $np ]; then
                echo "FAIL: np $np $share ${dt:+--dtype $dt}: rc $rc, $lines of $np ranks with checksum $want"
                printf '%s\n' "$out"; cat "$T/err"; fail=1; continue
            fi
            sum=$(printf '%s\n' "$out" | sed -n 's/.* read: //p' | awk '{s += $1} END {print s}')
            if [ -n "$share" ]; then
                [ "$sum" = "$DATA" ] || { echo "FAIL: np $np --share: ranks read $sum, data is $DATA"; fail=1; }
            else
                [ "$sum" = $((DATA * np)) ] || { echo "FAIL: np $np: ranks read $sum, want $np x $DATA"; fail=1; }
            fi
        done
    done
done
for np in 1 2 4; do
    for share in "" --share; do
        out=$($MPIRUN -np $np "$MPI" "$IDX" --checksum --tp $share 2>"$T/err")
        rc=$?
        [ $rc = 0 ] || { echo "FAIL: --tp np $np $share: rc $rc"; cat "$T/err"; fail=1; continue; }
        r=0
        while [ $r -lt $np ]; do
            want=$(tp_sum $np $r)
            printf '%s\n' "$out" | grep -q "^rank $r/$np: .* checksum: $want read: " ||
                { echo "FAIL: --tp np $np $share rank $r: want $want"; printf '%s\n' "$out"; fail=1; }
            r=$((r + 1))
        done
    done
done
# a rank that cannot load fails every rank, none waits: a shard missing
mv "$T/model-00002-of-00002.safetensors" "$T/gone"
out=$($MPIRUN -np 2 "$MPI" "$IDX" --share 2>&1); rc=$?
mv "$T/gone" "$T/model-00002-of-00002.safetensors"
[ $rc != 0 ] && [ "$(printf '%s\n' "$out" | grep -c 'error:')" -ge 1 ] ||
    { echo "FAIL: a missing shard: rc $rc"; printf '%s\n' "$out"; fail=1; }
[ $fail = 0 ] && echo "test_mpi.sh: all passed (1, 2, 4 ranks; --share, --tp, --dtype f32)"
exit $fail
