#!/bin/sh
# `safeload show` of a Windows build (under wine) prints what the native tool prints, for every
# tensor of the sample and of a file of float specials (NaN, Inf, -0, subnormals, extremes):
# the Windows C runtimes parse and print floats themselves (msvcrt writes 3-digit exponents).
# usage: tests/show_cmp.sh NATIVE_CLI WINDOWS_EXE DIR   (DIR holds sample.safetensors)
set -eu
native=$1 exe=$2 dir=$3
python3 - "$dir/specials.safetensors" <<'PY'
import struct, sys
parts = [("d", "F64", struct.pack("<6d", 0.1, 1e300, 5e-324, float("-inf"), -0.0, 2.0 ** -1022)),
         ("f", "F32", struct.pack("<6I", 0x7f7fffff, 1, 0x80000000, 0xffc00000, 0x00800000, 0x3eaaaaab)),
         ("h", "F16", struct.pack("<6H", 0x7c00, 0x0001, 0xfbff, 0x8000, 0x7e01, 0x3555)),
         ("b", "BF16", struct.pack("<6H", 0xffc0, 0xcf80, 0x3c20, 0x0001, 0x7f7f, 0x8080))]
h, data = [], b""
for n, dt, raw in parts:
    h.append('"%s":{"dtype":"%s","shape":[6],"data_offsets":[%d,%d]}' % (n, dt, len(data), len(data) + len(raw)))
    data += raw
h = ("{" + ",".join(h) + "}").encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
for spec in "sample lm_head.scale model.norm.weight model.embed_tokens.weight empty.bias
             model.layers.0.self_attn.q_proj.weight model.layers.0.mlp.experts.3.up_proj.weight" \
            "specials d f h b"; do
    set -- $spec
    file=$dir/$1.safetensors; shift
    for n in "$@"; do
        "$native" show "$file" "$n" --count all > "$dir/show_native.txt"
        sh tests/wine_run.sh "$exe" show "$file" "$n" --count all | tr -d '\r' > "$dir/show_win.txt"
        cmp "$dir/show_native.txt" "$dir/show_win.txt"
    done
done
echo "show: $exe prints what $native prints ($(cat "$dir/show_native.txt" | tail -n 1))"
