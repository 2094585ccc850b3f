#!/bin/sh
# The command-line tool end to end: exact output lines and exit codes.
set -u
CLI=${1:-build/safeload}
RUNNER=${RUNNER:-}   # e.g. qemu-arm, for a cross-built tool
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # name expected actual
    if [ "$2" != "$3" ]; then echo "FAIL: $1"; echo "  expected: $2"; echo "  actual:   $3"; fail=1; fi
}
run() { out=$("$@" 2>"$T/err"); rc=$?; }

# a valid sample: sample, verify, inspect --json
run $RUNNER "$CLI" sample "$T/s.safetensors"; check "sample exit" 0 "$rc"
run $RUNNER "$CLI" verify "$T/s.safetensors"
check "verify ok line" "ok: $T/s.safetensors: 6 tensors, 6792 bytes" "$out"; check "verify ok exit" 0 "$rc"
run $RUNNER "$CLI" inspect --json "$T/s.safetensors"
check "inspect json" '{"header_bytes":560,"data_bytes":6792,"metadata":{"format":"pt","source":"safeload sample"},"tensors":[{"name":"lm_head.scale","dtype":"F64","shape":[],"data_offsets":[0,8]},{"name":"model.norm.weight","dtype":"F32","shape":[32],"data_offsets":[8,136]},{"name":"model.embed_tokens.weight","dtype":"BF16","shape":[64,32],"data_offsets":[136,4232]},{"name":"empty.bias","dtype":"F16","shape":[0],"data_offsets":[4232,4232]},{"name":"model.layers.0.self_attn.q_proj.weight","dtype":"F16","shape":[32,32],"data_offsets":[4232,6280]},{"name":"model.layers.0.mlp.experts.3.up_proj.weight","dtype":"F8_E4M3","shape":[16,32],"data_offsets":[6280,6792]}]}' "$out"
run $RUNNER "$CLI" inspect "$T/s.safetensors"; check "inspect exit" 0 "$rc"
case "$out" in *"model.embed_tokens.weight"*BF16*"[64, 32]"*) ;; *) echo "FAIL: inspect table"; fail=1;; esac

# names and metadata from the file never reach the terminal raw: control bytes print as \xNN
hdr='{"__metadata__":{"k":"v\u001b[2J"},"a\u001b]0;x\u0007b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
{ printf "\\$(printf %03o ${#hdr})\\000\\000\\000\\000\\000\\000\\000"; printf '%s' "$hdr"; printf 'x'; } > "$T/esc.safetensors"
run $RUNNER "$CLI" inspect "$T/esc.safetensors"; check "inspect escaped exit" 0 "$rc"
case "$out" in *'  k: v\x1b[2J'*'a\x1b]0;x\x07b  U8'*) ;; *) echo "FAIL: inspect escapes: $out"; fail=1;; esac
if printf '%s' "$out" | LC_ALL=C grep -q "$(printf '\033')"; then echo "FAIL: raw ESC in inspect"; fail=1; fi

# verify: invalid files exit 1 with the error id and byte offset
printf '\001\002\003' > "$T/short.safetensors"
run $RUNNER "$CLI" verify "$T/short.safetensors"
check "verify short" "error: $T/short.safetensors: HEADER_TOO_SMALL: the file is 3 bytes; the header length alone needs 8 (byte 0)" "$out"
check "verify short exit" 1 "$rc"
printf '\010\000\000\000\000\000\000\000{"a":1}x' > "$T/json.safetensors"
run $RUNNER "$CLI" verify "$T/json.safetensors"
case "$out" in "error: $T/json.safetensors: INVALID_JSON: "*"(byte 13)") ;; *) echo "FAIL: verify json: $out"; fail=1;; esac
check "verify json exit" 1 "$rc"
head -c 100 "$T/s.safetensors" > "$T/cut.safetensors"
run $RUNNER "$CLI" verify "$T/cut.safetensors"
case "$out" in "error: $T/cut.safetensors: INVALID_HEADER_LENGTH: "*) ;; *) echo "FAIL: verify cut: $out"; fail=1;; esac
cp "$T/s.safetensors" "$T/trail.safetensors"; printf 'XX' >> "$T/trail.safetensors"
run $RUNNER "$CLI" verify "$T/trail.safetensors"
case "$out" in "error: $T/trail.safetensors: INCOMPLETE_BUFFER: "*"(byte 7360)") ;; *) echo "FAIL: verify trailing: $out"; fail=1;; esac
# usage and I/O errors exit 2
run $RUNNER "$CLI" verify; check "verify usage exit" 2 "$rc"
run $RUNNER "$CLI" verify "$T/missing.safetensors"; check "verify missing exit" 2 "$rc"
run $RUNNER "$CLI" frobnicate; check "unknown command exit" 2 "$rc"
run $RUNNER "$CLI" --help; check "help exit" 0 "$rc"
case "$out" in usage:*"safeload verify PATH"*) ;; *) echo "FAIL: help on stdout: $out"; fail=1;; esac
mkdir "$T/empty"; run $RUNNER "$CLI" verify "$T/empty"; check "verify empty dir exit" 2 "$rc"

# load: the checksum is FNV-1a 64 of the data section (no cast), for every mode
for io in read mmap direct; do
  for th in 1 2 3; do
    run $RUNNER "$CLI" load "$T/s.safetensors" --threads $th --io $io --checksum
    check "load $io $th exit" 0 "$rc"
    sum=$(printf '%s\n' "$out" | sed -n 's/^checksum: //p')
    check "load $io $th checksum" "6ed30d43935be136" "$sum"   # FNV-1a of the data section, computed outside
  done
done
run $RUNNER "$CLI" load "$T/s.safetensors" --dtype f32 --progress --checksum; check "load cast exit" 0 "$rc"
case "$out" in "loaded: 6 tensors, 6792 bytes in "*) ;; *) echo "FAIL: load summary: $out"; fail=1;; esac
grep -q '100%' "$T/err" || { echo "FAIL: no progress bar"; fail=1; }
run $RUNNER "$CLI" load "$T/s.safetensors" --dtype f64; check "load bad dtype exit" 2 "$rc"

# keys
printf 'model.norm.weight\nlm_head.scale\nnot.there\n' > "$T/names"
run $RUNNER "$CLI" keys "$T/s.safetensors" --expect "$T/names"
check "keys exit" 1 "$rc"
check "keys output" "missing: not.there
unexpected: model.embed_tokens.weight
unexpected: empty.bias
unexpected: model.layers.0.self_attn.q_proj.weight
unexpected: model.layers.0.mlp.experts.3.up_proj.weight
3 expected, 6 in the checkpoint: 1 missing, 4 unexpected" "$out"

# the names may come from a pipe (no size to ask for); a directory is an error with a message
out=$(printf 'model.norm.weight\nlm_head.scale\n' | $RUNNER "$CLI" keys "$T/s.safetensors" --expect /dev/stdin 2>"$T/err"); rc=$?
check "keys from a pipe exit" 1 "$rc"
case "$out" in *"2 expected, 6 in the checkpoint: 0 missing, 4 unexpected") ;; *) echo "FAIL: keys pipe: $out"; fail=1;; esac
run $RUNNER "$CLI" keys "$T/s.safetensors" --expect "$T"; check "keys dir exit" 2 "$rc"
grep -q 'cannot read' "$T/err" || { echo "FAIL: keys dir: no message"; fail=1; }

# --threads takes a whole number 0..1024 and nothing else
for v in abc 3x '' -1 1025 99999999999; do
  run $RUNNER "$CLI" load "$T/s.safetensors" --threads "$v"; check "threads '$v' exit" 2 "$rc"
done
run $RUNNER "$CLI" load "$T/s.safetensors" --threads 0; check "threads 0 exit" 0 "$rc"

# a pipe is refused at once (not waited on); sample does not replace one
mkfifo "$T/fifo"
out=$(timeout 10 $RUNNER "$CLI" verify "$T/fifo" 2>&1); rc=$?
check "verify fifo exit" 2 "$rc"
run $RUNNER "$CLI" sample "$T/fifo"; check "sample over a fifo exit" 2 "$rc"
[ -p "$T/fifo" ] || { echo "FAIL: sample replaced the fifo"; fail=1; }

# an index with one shard and no metadata still prints the sharded JSON form
mkdir "$T/one"; cp "$T/s.safetensors" "$T/one/m.safetensors"
printf '{"weight_map": {"lm_head.scale": "m.safetensors"}}' > "$T/one/model.safetensors.index.json"
run $RUNNER "$CLI" inspect --json "$T/one"; check "inspect one-shard index exit" 0 "$rc"
case "$out" in '{"metadata":{},"shards":[{"file":'*) ;; *) echo "FAIL: one-shard index json: $out"; fail=1;; esac

# output that cannot be written is a failure
if [ -w /dev/full ]; then
  $RUNNER "$CLI" inspect "$T/s.safetensors" > /dev/full 2>/dev/null; check "inspect to /dev/full exit" 2 "$?"
fi

# the reference files verify and checksum as their manifest says
R=tests/data/reference
if [ -f "$R/MANIFEST.txt" ]; then
  for f in all_dtypes bf16_2mib f16_1mib f32_2mib metadata mixed_named; do
    want=$(awk -v f="$f.safetensors" '$1=="file"{cur=$2} $1=="data_fnv1a64" && cur==f {print substr($2,3)}' "$R/MANIFEST.txt")
    run $RUNNER "$CLI" load "$R/$f.safetensors" --checksum
    sum=$(printf '%s\n' "$out" | sed -n 's/^checksum: //p')
    check "reference $f checksum" "$want" "$sum"
  done
fi

[ $fail = 0 ] && echo "test_cli.sh: all passed"
exit $fail
