#!/bin/sh
# The command-line tool end to end: exact output lines and exit codes.
set -u
CLI=${1:-build/safeload}
RUNNER=${RUNNER:-}   # e.g. qemu-arm, for a cross-built tool
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # name expected actual
    if [ "$2" != "$3" ]; then printf 'FAIL: %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"; fail=1; fi
}
run() { out=$("$@" 2>"$T/err"); rc=$?; }
err() { cat "$T/err"; }
# mk FILE HEADER [DATA]: a safetensors image by hand (ASCII header under 64 KiB)
mk() {
    n=$(printf '%s' "$2" | wc -c)   # bytes, whatever the locale
    printf "\\$(printf %03o $((n % 256)))\\$(printf %03o $((n / 256)))\\000\\000\\000\\000\\000\\000" > "$1"
    printf '%s%s' "$2" "${3:-}" >> "$1"
}

# layout: inspect --json's document (stdin) cut to the fields these checks compare, in the
# compact order they are written: a file's header, metadata and tensors (and, sharded, each
# shard's file and the warnings); the other fields are checked by the schema checks below
layout() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
def shard(s):
    ts = []
    for t in s["tensors"]:
        o = {"name": t["name"], "dtype": t["dtype"], "shape": t["shape"], "data_offsets": t["data_offsets"]}
        if t["unlisted"]: o["unlisted"] = True
        ts.append(o)
    return {"header_bytes": s["header_bytes"], "data_bytes": s["data_bytes"], "metadata": s["metadata"], "tensors": ts}
if not d["sharded"]:
    o = shard(d["shards"][0])
else:
    o = {"metadata": d["metadata"], "shards": [{"file": s["file"], "checkpoint": shard(s)} for s in d["shards"]],
         "warnings": [{"id": w["id"], "file": w["file"], "tensor": w["tensor"], "byte": w["offset"], "message": w["message"]} for w in d["warnings"]]}
print(json.dumps(o, separators=(",", ":"), ensure_ascii=False))'
}

# a valid sample: sample, verify, inspect --json
run $RUNNER "$CLI" sample "$T/s.safetensors"; check "sample exit" 0 "$rc"
run $RUNNER "$CLI" verify "$T/s.safetensors"
check "verify ok line" "ok: $T/s.safetensors: 6 tensors, 6792 bytes" "$out"; check "verify ok exit" 0 "$rc"
run $RUNNER "$CLI" inspect --json "$T/s.safetensors"; out=$(printf '%s' "$out" | layout)
sjson='{"header_bytes":560,"data_bytes":6792,"metadata":{"format":"pt","source":"safeload sample"},"tensors":[{"name":"lm_head.scale","dtype":"F64","shape":[],"data_offsets":[0,8]},{"name":"model.norm.weight","dtype":"F32","shape":[32],"data_offsets":[8,136]},{"name":"model.embed_tokens.weight","dtype":"BF16","shape":[64,32],"data_offsets":[136,4232]},{"name":"empty.bias","dtype":"F16","shape":[0],"data_offsets":[4232,4232]},{"name":"model.layers.0.self_attn.q_proj.weight","dtype":"F16","shape":[32,32],"data_offsets":[4232,6280]},{"name":"model.layers.0.mlp.experts.3.up_proj.weight","dtype":"F8_E4M3","shape":[16,32],"data_offsets":[6280,6792]}]}'
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
case "$out" in "error: $T/trail.safetensors: INCOMPLETE_BUFFER: "*"end at byte 7360)") ;; *) echo "FAIL: verify trailing: $out"; fail=1;; esac  # the message names the byte: no "(byte N)" again
# usage and I/O errors exit 2
run $RUNNER "$CLI" verify; check "verify usage exit" 2 "$rc"
run $RUNNER "$CLI" verify "$T/missing.safetensors"; check "verify missing exit" 2 "$rc"
run $RUNNER "$CLI" frobnicate; check "unknown command exit" 2 "$rc"
check "unknown command" "error: unknown command frobnicate" "$(head -n 1 "$T/err")"
# a usage error says what was wrong first, then the usage
for a in "verify|error: verify needs a PATH" "verify a b|error: more than one PATH: b" \
         "verify --x|error: unknown option --x" "inspect a --yaml|error: unknown option --yaml" \
         "load|error: load needs a PATH" "load a --threads|error: a value is missing after --threads" \
         "load a --threads 2x|error: --threads takes a whole number from 0 to 1024, not 2x" \
         "load a --threads 1025|error: --threads takes a whole number from 0 to 1024, not 1025" \
         "load a --dtype f64|error: --dtype takes f32, f16 or bf16, not f64" \
         "load a --io fast|error: --io takes read, mmap, direct or auto, not fast" \
         "keys|error: keys needs a PATH" "keys a --expect|error: a value is missing after --expect" \
         "sample|error: sample needs an OUT path" "sample a b|error: unexpected argument b" \
         "|error: no command given"; do
    # shellcheck disable=SC2086
    run $RUNNER "$CLI" ${a%%|*}; check "usage: ${a%%|*} exit" 2 "$rc"
    check "usage: ${a%%|*}" "${a#*|}" "$(head -n 1 "$T/err")"
    check "usage: ${a%%|*} then the usage" "usage:" "$(sed -n 2p "$T/err")"
done
run $RUNNER "$CLI" --help; check "help exit" 0 "$rc"
case "$out" in usage:*"safeload verify PATH"*) ;; *) echo "FAIL: help on stdout: $out"; fail=1;; esac
mkdir "$T/empty"; run $RUNNER "$CLI" verify "$T/empty"; check "verify empty dir exit" 2 "$rc"

# load: the checksum is FNV-1a 64 of the data section (no cast), for every mode
for io in read mmap direct auto; do
  for th in 1 2 3; do
    run $RUNNER "$CLI" load "$T/s.safetensors" --threads $th --io $io --checksum
    check "load $io $th exit" 0 "$rc"
    sum=$(printf '%s\n' "$out" | sed -n 's/^checksum: //p')
    check "load $io $th checksum" "6ed30d43935be136" "$sum"   # FNV-1a of the data section, computed outside
  done
done
# auto: the sample was just written, so its bytes are in the page cache: no file goes direct
run $RUNNER "$CLI" load "$T/s.safetensors" --io auto
case "$rc $out" in "0 loaded: 6 tensors, "*"io auto: 0 of 1 file direct)") ;; *) echo "FAIL: load --io auto: $rc $out"; fail=1;; esac
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
# a block device neither (its size is the device's), alone or as a shard; where one can be read
blk=
for b in /dev/loop0 /dev/loop1 /dev/sda /dev/vda /dev/nvme0n1; do [ -b "$b" ] && [ -r "$b" ] && { blk=$b; break; }; done
if [ -n "$blk" ] && [ -z "$RUNNER" ]; then
    run "$CLI" verify "$blk"
    check "verify a block device" "2 error: $blk: IO_ERROR: cannot open: a block device, not a file (error 15)" "$rc $out"
    mkdir "$T/blk"; ln -s "$blk" "$T/blk/b.safetensors"
    printf '{"weight_map":{"t":"b.safetensors"}}' > "$T/blk/model.safetensors.index.json"
    run "$CLI" verify "$T/blk"
    case "$rc $out" in "2 error: $T/blk: INDEX_SHARD_MISSING: "*"a block device, not a file"*) ;;
        *) echo "FAIL: a block device as a shard: $rc $out"; fail=1;; esac
fi
# a character device is not a (0-byte) checkpoint
run $RUNNER "$CLI" verify /dev/zero; check "verify /dev/zero exit" 2 "$rc"
check "verify /dev/zero" "error: /dev/zero: IO_ERROR: cannot open: a character device, not a file (error 19)" "$out"
# a Unix socket (open() gives ENXIO) is refused with a message that says what it is
if command -v python3 > /dev/null 2>&1 &&
   python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$T/sock" 2>/dev/null; then
  run $RUNNER "$CLI" verify "$T/sock"; check "verify socket exit" 2 "$rc"
  check "verify socket" "error: $T/sock: IO_ERROR: cannot open: a socket or a device that is not there, not a file (error 6)" "$out"
fi

# an index with one shard and no metadata still prints the sharded JSON form
mkdir "$T/one"; cp "$T/s.safetensors" "$T/one/m.safetensors"
printf '{"weight_map": {"lm_head.scale": "m.safetensors"}}' > "$T/one/model.safetensors.index.json"
run $RUNNER "$CLI" inspect --json "$T/one"; check "inspect one-shard index exit" 0 "$rc"; out=$(printf "%s" "$out" | layout)
# the five tensors the index leaves out are marked, and each has a warning (with its byte)
ujson=$(printf '%s' "$sjson" | sed 's/\("data_offsets":\[[0-9]*,[0-9]*\]\)}/\1,"unlisted":true}/g; s/"data_offsets":\[0,8\],"unlisted":true/"data_offsets":[0,8]/')
uw() { printf '{"id":"INDEX_UNLISTED_TENSOR","file":"%s","tensor":"%s","byte":%s,"message":"tensor is in this shard but not in %s'"'"'s weight_map; it is left out of the model"}' "$T/one/m.safetensors" "$1" "$2" "$T/one/model.safetensors.index.json"; }
warns="$(uw model.norm.weight 131),$(uw model.embed_tokens.weight 203),$(uw empty.bias 290),$(uw model.layers.0.self_attn.q_proj.weight 358),$(uw model.layers.0.mlp.experts.3.up_proj.weight 458)"
check "one-shard index json" "{\"metadata\":{},\"shards\":[{\"file\":\"$T/one/m.safetensors\",\"checkpoint\":$ujson}],\"warnings\":[$warns]}" "$out"
check "one-shard index warning" "warning: $T/one/m.safetensors: INDEX_UNLISTED_TENSOR: tensor is in this shard but not in $T/one/model.safetensors.index.json's weight_map; it is left out of the model [tensor empty.bias] (byte 290)" "$(sed -n 3p "$T/err")"
run $RUNNER "$CLI" inspect "$T/one"
check "one-shard index table" "lm_head.scale                                F64          []                           8 B  0
model.norm.weight                            F32          [32]                       128 B  8  (unlisted: not in the model)" "$(printf '%s\n' "$out" | sed -n 8,9p)"

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

# errors name the tensor, metadata key or index entry the library names, in every command
mk "$T/sm.safetensors" '{"z":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}' xyzw
want="error: $T/sm.safetensors: SIZE_MISMATCH: data_offsets [0, 4] hold 4 bytes but F32 x 2 elements needs 8 [tensor z] (byte 9)"
run $RUNNER "$CLI" verify "$T/sm.safetensors"; check "verify names the tensor" "$want" "$out"; check "verify sm exit" 1 "$rc"
run $RUNNER "$CLI" inspect "$T/sm.safetensors"; check "inspect names the tensor" "$want" "$(err)"; check "inspect sm exit" 1 "$rc"
run $RUNNER "$CLI" load "$T/sm.safetensors"; check "load names the tensor" "$want" "$(err)"
printf 'z\n' > "$T/z.names"
run $RUNNER "$CLI" keys "$T/sm.safetensors" --expect "$T/z.names"; check "keys names the tensor" "$want" "$(err)"
check "keys on an invalid checkpoint exits 2 (no answer), not 1 (names differ)" 2 "$rc"
mk "$T/dupmeta.safetensors" '{"__metadata__":{"k":"a","k":"b"},"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' x
run $RUNNER "$CLI" verify "$T/dupmeta.safetensors"
case "$out" in "error: $T/dupmeta.safetensors: DUPLICATE_KEY: "*" [metadata key k] (byte 33)") ;; *) echo "FAIL: verify metadata key: $out"; fail=1;; esac
run $RUNNER "$CLI" inspect "$T/dupmeta.safetensors"
case "$(err)" in "error: $T/dupmeta.safetensors: DUPLICATE_KEY: "*" [metadata key k] (byte 33)") ;; *) echo "FAIL: inspect metadata key: $(err)"; fail=1;; esac
mkdir "$T/mi"; mk "$T/mi/a.safetensors" '{"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' x
printf '{"weight_map":{"z":"a.safetensors","q":"a.safetensors"}}' > "$T/mi/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/mi"; check "verify index missing exit" 1 "$rc"
case "$out" in "error: $T/mi: INDEX_MISSING_TENSOR: "*" [tensor q] [file $T/mi/model.safetensors.index.json] (byte 35)") ;; *) echo "FAIL: verify index missing: $out"; fail=1;; esac
run $RUNNER "$CLI" load "$T/mi"
case "$(err)" in "error: $T/mi/model.safetensors.index.json: INDEX_MISSING_TENSOR: "*" [tensor q] (byte 35)") ;; *) echo "FAIL: load index missing: $(err)"; fail=1;; esac
mkdir "$T/dup"; mk "$T/dup/a.safetensors" '{"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' x
mk "$T/dup/b.safetensors" '{"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"y":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}' zy
printf '{"weight_map":{"z":"a.safetensors","y":"b.safetensors"}}' > "$T/dup/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/dup"; check "verify index duplicate exit" 1 "$rc"
case "$out" in "error: $T/dup: INDEX_DUPLICATE_TENSOR: "*" [tensor z] [file $T/dup/"[ab]".safetensors] (byte 9)") ;; *) echo "FAIL: verify index duplicate: $out"; fail=1;; esac

# keys prints the model's warnings like the other commands (the shard's other 5 are unlisted)
printf 'lm_head.scale\n' > "$T/one.names"
run $RUNNER "$CLI" keys "$T/one" --expect "$T/one.names"; check "keys one-shard exit" 0 "$rc"
check "keys one-shard output" "1 expected, 1 in the checkpoint: 0 missing, 0 unexpected" "$out"
check "keys warnings" 5 "$(grep -c "^warning: $T/one/m.safetensors: INDEX_UNLISTED_TENSOR: .* \[tensor [a-z_.0-9]*\] (byte [0-9]*)$" "$T/err")"
check "keys warning for model.norm.weight" 1 "$(grep -c '\[tensor model.norm.weight\] (byte 131)$' "$T/err")"
run $RUNNER "$CLI" verify "$T/one"; check "verify one-shard (the model's bytes)" "ok: $T/one: 1 tensor, 8 bytes" "$out"
check "verify warnings" 5 "$(grep -c "^warning: $T/one/m.safetensors: INDEX_UNLISTED_TENSOR: " "$T/err")"

# counts of one are singular; sharded --json is one line like the single-file form
mk "$T/u8.safetensors" '{"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' x
run $RUNNER "$CLI" verify "$T/u8.safetensors"; check "verify singular" "ok: $T/u8.safetensors: 1 tensor, 1 byte" "$out"
run $RUNNER "$CLI" inspect "$T/u8.safetensors"
check "inspect singular" "$T/u8.safetensors: 1 tensor, header 53 bytes, data 1 byte" "$(printf '%s\n' "$out" | head -n 1)"
run $RUNNER "$CLI" load "$T/u8.safetensors" --threads 1
case "$out" in "loaded: 1 tensor, 1 byte in "*" GB/s (opened in "*" s; 1 byte written; 1 thread, io read)") ;; *) echo "FAIL: load singular: $out"; fail=1;; esac
mkdir "$T/two"; cp "$T/u8.safetensors" "$T/two/a.safetensors"
mk "$T/two/b.safetensors" '{"y":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}' yy
printf '{"metadata":{"total_size":3},"weight_map":{"z":"a.safetensors","y":"b.safetensors"}}' > "$T/two/model.safetensors.index.json"
run $RUNNER "$CLI" inspect "$T/two"; check "inspect sharded header" "$T/two: 2 shards, 2 tensors" "$(printf '%s\n' "$out" | head -n 1)"
run $RUNNER "$CLI" inspect "$T/one"; check "inspect one-shard header" "$T/one: 1 shard, 1 tensor" "$(printf '%s\n' "$out" | head -n 1)"
run $RUNNER "$CLI" inspect --json "$T/two"; out=$(printf "%s" "$out" | layout)
check "sharded json" "{\"metadata\":{\"total_size\":\"3\"},\"shards\":[{\"file\":\"$T/two/a.safetensors\",\"checkpoint\":{\"header_bytes\":53,\"data_bytes\":1,\"metadata\":null,\"tensors\":[{\"name\":\"z\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}]}},{\"file\":\"$T/two/b.safetensors\",\"checkpoint\":{\"header_bytes\":53,\"data_bytes\":2,\"metadata\":null,\"tensors\":[{\"name\":\"y\",\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}]}}],\"warnings\":[]}" "$out"
check "sharded json lines" 1 "$($RUNNER "$CLI" inspect --json "$T/two" | wc -l | tr -d ' ')"

# paths given print escaped everywhere: control bytes as \xNN, a backslash as \\ (a name with
# the text \x0a in it reads differently from one with a newline)
P="$T/$(printf 'p\033[31m\nq\\x0a')"; E="$T/p\\x1b[31m\\x0aq\\\\x0a"
mkdir "$P"
run $RUNNER "$CLI" sample "$P/s.safetensors"; check "sample escaped path" "wrote $E/s.safetensors" "$out"
run $RUNNER "$CLI" verify "$P/s.safetensors"; check "verify escaped path" "ok: $E/s.safetensors: 6 tensors, 6792 bytes" "$out"
mkdir "$P/one"; cp "$T/one/m.safetensors" "$T/one/model.safetensors.index.json" "$P/one/"
run $RUNNER "$CLI" inspect "$P/one"; check "inspect sharded escaped path" "$E/one: 1 shard, 1 tensor" "$(printf '%s\n' "$out" | head -n 1)"
case "$(err)" in "warning: $E/one/m.safetensors: INDEX_UNLISTED_TENSOR: "*) ;; *) echo "FAIL: warning escaped path: $(err)"; fail=1;; esac
all="$out$(err)"
run $RUNNER "$CLI" keys "$T/s.safetensors" --expect "$P/nope"; check "keys cannot open escaped" "error: $E/nope: IO_ERROR: cannot open: no such file (error 2)" "$(err)"
all="$all$(err)"
run $RUNNER "$CLI" keys "$T/s.safetensors" --expect "$P"; check "keys cannot read escaped" "error: $E: IO_ERROR: cannot read the names" "$(err)"
all="$all$(err)"
run $RUNNER "$CLI" verify "$P/sm.safetensors"; check "verify missing escaped exit" 2 "$rc"
case "$out" in "error: $E/sm.safetensors: IO_ERROR: "*) ;; *) echo "FAIL: verify missing escaped: $out"; fail=1;; esac
all="$all$out"
cp "$T/sm.safetensors" "$P/bad.safetensors"   # the library keeps its file name with '?' for them
want="error: $E/bad.safetensors: SIZE_MISMATCH: data_offsets [0, 4] hold 4 bytes but F32 x 2 elements needs 8 [tensor z] (byte 9)"
run $RUNNER "$CLI" verify "$P/bad.safetensors"; check "verify escaped path, no [file]" "$want" "$out"
all="$all$out"
run $RUNNER "$CLI" inspect "$P/bad.safetensors"; check "inspect escaped path in full" "$want" "$(err)"
all="$all$(err)"
if printf '%s' "$all" | LC_ALL=C grep -q "$(printf '\033')"; then echo "FAIL: raw ESC from a path"; fail=1; fi
hdr='{"a\\x0ab":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a\nb":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}'
mk "$T/bs.safetensors" "$hdr" xy
run $RUNNER "$CLI" inspect "$T/bs.safetensors"
check "inspect backslash" 'name     dtype        shape                       size  offset
a\\x0ab  U8           [1]                          1 B  0
a\x0ab   U8           [1]                          1 B  1
summary: 2 tensors, 2 parameters (U8 2), 2 bytes' "$(printf '%s\n' "$out" | sed 1d)"
# columns line up by characters, not bytes (a UTF-8 name takes one column per character)
mk "$T/utf.safetensors" "{\"caf$(printf '\303\251')\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"xy\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}" xy
run $RUNNER "$CLI" inspect "$T/utf.safetensors"
check "inspect utf-8 width" "$(printf 'name  dtype        shape                       size  offset\ncaf\303\251  U8           [1]                          1 B  0\nxy    U8           [1]                          1 B  1\nsummary: 2 tensors, 2 parameters (U8 2), 2 bytes')" "$(printf '%s\n' "$out" | sed 1d)"
run $RUNNER "$CLI" inspect --json "$T/bs.safetensors"
case "$out" in *'"tensors":[{"name":"a\\x0ab",'*'{"name":"a\nb",'*) ;; *) echo "FAIL: json backslash: $out"; fail=1;; esac

# a path of 512 bytes or more (past safeload_error.file): the full path, no bogus [file ...]
L="$T"; for i in 1 2 3 4 5 6; do L="$L/dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"; done
mkdir -p "$L"; cp "$T/sm.safetensors" "$L/sm.safetensors"
want="error: $L/sm.safetensors: SIZE_MISMATCH: data_offsets [0, 4] hold 4 bytes but F32 x 2 elements needs 8 [tensor z] (byte 9)"
run $RUNNER "$CLI" verify "$L/sm.safetensors"; check "verify long path" "$want" "$out"
run $RUNNER "$CLI" inspect "$L/sm.safetensors"; check "inspect long path" "$want" "$(err)"
run $RUNNER "$CLI" load "$L/sm.safetensors"; check "load long path" "$want" "$(err)"
mkdir "$L/one"; cp "$T/one/m.safetensors" "$T/one/model.safetensors.index.json" "$L/one/"
run $RUNNER "$CLI" load "$L/one"; check "load long index exit" 0 "$rc"
check "long path warnings name the shard in full" 5 "$(grep -c "^warning: $L/one/m.safetensors: INDEX_UNLISTED_TENSOR: " "$T/err")"
# a bad shard under a long directory, which the model never opened: the cut name with "...",
# never the directory's own path (the two look the same once cut)
mkdir "$L/bad"; cp "$L/sm.safetensors" "$L/bad/b.safetensors"
printf '{"weight_map":{"z":"b.safetensors"}}' > "$L/bad/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$L/bad"; check "long dir, bad shard exit" 1 "$rc"
case "$out" in "error: $L/bad: SIZE_MISMATCH: "*"[tensor z] [file $T/"*"...] (byte 9)") ;;
    *) echo "FAIL: long dir, bad shard: $out"; fail=1;; esac
run $RUNNER "$CLI" load "$L/bad"
case "$(err)" in "error: $T/"*"...: SIZE_MISMATCH: "*) ;; *) echo "FAIL: long dir, bad shard (load): $(err)"; fail=1;; esac
# the same under a long directory whose name ends in .safetensors
mkdir "$L/d.safetensors"; cp "$L/bad/b.safetensors" "$L/bad/model.safetensors.index.json" "$L/d.safetensors/"
run $RUNNER "$CLI" verify "$L/d.safetensors"
case "$out" in "error: $L/d.safetensors: SIZE_MISMATCH: "*"[file $T/"*"...] (byte 9)") ;;
    *) echo "FAIL: long .safetensors dir, bad shard: $out"; fail=1;; esac

# unsafe shard names: the first entry in index order that has one is named (they are checked
# once per distinct name, in sorted order, so "/abs" would come first there)
mkdir "$T/unsafe"
printf '{"weight_map":{"a":"../x.safetensors","b":"/abs.safetensors","c":"m.safetensors"}}' > "$T/unsafe/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/unsafe"
check "first unsafe shard name" "1 error: $T/unsafe: INVALID_INDEX: shard name \"../x.safetensors\" is not a file inside the index's directory (absolute, an empty part, .. or a final .) [tensor a] [file $T/unsafe/model.safetensors.index.json] (byte 15)" "$rc $out"

# a message cut for a long path says so ("..."), and keeps the reason ahead of the path
mkdir "$L/gone"; printf '{"weight_map":{"z":"b.safetensors"}}' > "$L/gone/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$L/gone"
case "$rc $out" in "2 error: $L/gone: INDEX_SHARD_MISSING: shard cannot be opened (cannot open: no such file (error 2)), listed in $T/"*"... [tensor z] [file $T/"*"...]") ;;
    *) echo "FAIL: long path in a message: $rc $out"; fail=1;; esac

# --progress shows a bar for an empty load too (the library reports the end once, 0 of 0)
mk "$T/nothing.safetensors" '{"e":{"dtype":"F16","shape":[0],"data_offsets":[0,0]}}'
run $RUNNER "$CLI" load "$T/nothing.safetensors" --progress; check "empty load exit" 0 "$rc"
grep -q '100%' "$T/err" || { echo "FAIL: no progress bar for an empty load"; fail=1; }

# a shape too wide for the table is cut as ", ...]" (a zero-size tensor may have huge dims)
mk "$T/wide.safetensors" '{"w":{"dtype":"F32","shape":[0,1,18446744073709551615,18446744073709551615,18446744073709551615,18446744073709551615,18446744073709551615],"data_offsets":[0,0]}}'
run $RUNNER "$CLI" inspect "$T/wide.safetensors"; check "wide shape exit" 0 "$rc"
case "$out" in *"[0, 1, 18446744073709551615, "*", ...]  "*) ;; *) echo "FAIL: wide shape: $out"; fail=1;; esac

# errors in __metadata__ name a metadata key, and say where
mk "$T/mk.safetensors" '{"__metadata__":{"k":1},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' x
run $RUNNER "$CLI" verify "$T/mk.safetensors"
check "metadata key error" "error: $T/mk.safetensors: INVALID_JSON: invalid type: number, expected a string in __metadata__ [metadata key k] (byte 29)" "$out"
mk "$T/mc.safetensors" '{"__metadata__":{"k":"v",},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' x
run $RUNNER "$CLI" verify "$T/mc.safetensors"
check "metadata trailing comma names no key" "error: $T/mc.safetensors: INVALID_JSON: trailing comma (byte 33)" "$out"

# invisible characters and bytes that are not UTF-8 print as \xNN: a zero-width space, a
# right-to-left override, and a lone 0x9B (CSI to some terminals) in a path
mk "$T/bidi.safetensors" '{"lm\u200b.w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a\u202eb":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}' xy
run $RUNNER "$CLI" inspect "$T/bidi.safetensors"
case "$out" in *'lm\xe2\x80\x8b.w  U8'*'a\xe2\x80\xaeb'*) ;; *) echo "FAIL: invisible characters: $out"; fail=1;; esac
run $RUNNER "$CLI" verify "$T/x$(printf '\233')0m"
case "$out" in "error: $T/x\\x9b0m: IO_ERROR: "*) ;; *) echo "FAIL: lone 0x9B: $out"; fail=1;; esac

# "--" ends the options: a PATH may start with '-'; sample takes no options
case $CLI in /*) A=$CLI;; *) A=$PWD/$CLI;; esac
(cd "$T" && $RUNNER "$A" sample -- -d.safetensors >/dev/null); check "sample -- exit" 0 "$?"
(cd "$T" && $RUNNER "$A" verify -- -d.safetensors >/dev/null); check "verify -- exit" 0 "$?"
(cd "$T" && $RUNNER "$A" load --io MMAP --dtype BF16 -- -d.safetensors >/dev/null); check "load -- exit" 0 "$?"
(cd "$T" && $RUNNER "$A" inspect --json -- -d.safetensors >/dev/null); check "inspect -- exit" 0 "$?"
(cd "$T" && $RUNNER "$A" verify -d.safetensors 2>/dev/null); check "verify -x without -- exit" 2 "$?"
# "--" may also come after the PATH, in every command
(cd "$T" && $RUNNER "$A" verify s.safetensors -- >/dev/null); check "verify PATH -- exit" 0 "$?"
(cd "$T" && $RUNNER "$A" inspect s.safetensors -- >/dev/null); check "inspect PATH -- exit" 0 "$?"
(cd "$T" && $RUNNER "$A" sample s2.safetensors -- >/dev/null); check "sample OUT -- exit" 0 "$?"
(cd "$T" && $RUNNER "$A" verify -- s.safetensors -- 2>/dev/null); check "verify -- PATH -- (a second PATH) exit" 2 "$?"
run $RUNNER "$CLI" sample --help
case "$rc $out" in "0 usage:"*) ;; *) echo "FAIL: sample --help: $rc $out"; fail=1;; esac
for a in "sample --hepl|error: unknown option --hepl" "load a --threads +3|error: --threads takes a whole number from 0 to 1024, not +3" \
         "load a --threads -0|error: --threads takes a whole number from 0 to 1024, not -0"; do
    # shellcheck disable=SC2086
    run $RUNNER "$CLI" ${a%%|*}; check "usage: ${a%%|*} exit" 2 "$rc"
    check "usage: ${a%%|*}" "${a#*|}" "$(head -n 1 "$T/err")"
done
[ -e "$T/--help" ] && { echo "FAIL: sample wrote a file named --help"; fail=1; }

# warnings name an unlisted tensor in full, past the library's 255 bytes and with its control
# bytes (escaped as the table escapes them)
long=$(printf 'L%.0s' $(seq 1 300))
mkdir "$T/wl"
mk "$T/wl/m.safetensors" "{\"k\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"$long\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},\"c\\u0007d\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}" xyz
printf '{"weight_map":{"k":"m.safetensors"}}' > "$T/wl/model.safetensors.index.json"
run $RUNNER "$CLI" inspect --json "$T/wl"; check "full warning names exit" 0 "$rc"
case "$out" in *"\"tensor\":\"$long\""*'"tensor":"c\u0007d"'*) ;; *) echo "FAIL: warnings in JSON do not carry the full names"; fail=1;; esac
run $RUNNER "$CLI" verify "$T/wl"
case "$(err)" in *"[tensor $long]"*'[tensor c\x07d]'*) ;; *) echo "FAIL: warnings in text do not carry the full names: $(err)"; fail=1;; esac

# more invisible characters: soft hyphen, word joiner, line separator, Arabic letter mark, a tag
mk "$T/inv.safetensors" '{"a\u00adb\u2060c\u2028d\u061ce\udb40\udc41f":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' x
run $RUNNER "$CLI" inspect "$T/inv.safetensors"
case "$out" in *'a\xc2\xadb\xe2\x81\xa0c\xe2\x80\xa8d\xd8\x9ce\xf3\xa0\x81\x81f  U8'*) ;; *) echo "FAIL: invisible characters (2): $out"; fail=1;; esac

# a metadata-key label only from the library's own words, not from a shard name it quotes
mkdir "$T/spoof"; cp "$T/s.safetensors" "$T/spoof/x in __metadata__.safetensors"
printf '{"weight_map":{"lm_head.scale":"x in __metadata__.safetensors","t":"x in __metadata__.safetensors"}}' > "$T/spoof/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/spoof"
case "$out" in *'[tensor t]'*) ;; *) echo "FAIL: label from a shard name: $out"; fail=1;; esac

# keys: a names file with a NUL byte is refused (no tensor name holds one)
printf 'lm_head.scale\n\n\nfoo\000junk\n' > "$T/nul.txt"
run $RUNNER "$CLI" keys "$T/s.safetensors" --expect "$T/nul.txt"; check "keys NUL exit" 2 "$rc"
check "keys NUL" "error: $T/nul.txt: line 4 holds a NUL byte, which no tensor name can" "$(err)"

# keys: a NUL ends the reading at once (an endless /dev/zero is refused, not read into memory);
# a BOM is skipped like CRLF; a names file that will not open says why
if [ -z "$RUNNER" ] && [ -c /dev/zero ]; then
    run sh -c 'ulimit -v 400000; exec "$1" keys "$2" --expect /dev/zero' sh "$CLI" "$T/s.safetensors"
    check "keys /dev/zero" "2 error: /dev/zero: line 1 holds a NUL byte, which no tensor name can" "$rc $(err)"
fi
printf '\357\273\277lm_head.scale\r\nmodel.norm.weight\r\nmodel.embed_tokens.weight\r\nempty.bias\r\nmodel.layers.0.self_attn.q_proj.weight\r\nmodel.layers.0.mlp.experts.3.up_proj.weight\r\n' > "$T/bom.txt"
run $RUNNER "$CLI" keys "$T/s.safetensors" --expect "$T/bom.txt"
check "keys BOM" "0 6 expected, 6 in the checkpoint: 0 missing, 0 unexpected" "$rc $out"
run $RUNNER "$CLI" keys "$T/s.safetensors" --expect "$T/no such names"
check "keys cannot open" "2 error: $T/no such names: IO_ERROR: cannot open: no such file (error 2)" "$rc $(err)"

# --opt=VALUE for the options that take a value (not after "--", not for flags); --expect -
# reads the names from standard input
run $RUNNER "$CLI" load "$T/s.safetensors" --threads=2 --io=read --dtype=f32 --checksum
sumf=$(printf '%s\n' "$out" | tail -n 1)
run $RUNNER "$CLI" load "$T/s.safetensors" --threads 2 --io read --dtype f32 --checksum
check "--opt=VALUE" "0 $(printf '%s\n' "$out" | tail -n 1)" "$rc $sumf"
run $RUNNER "$CLI" inspect --json=1 "$T/s.safetensors"
check "--flag=VALUE" "2 error: unknown option --json=1" "$rc $(head -n 1 "$T/err")"
run $RUNNER "$CLI" verify -- --io=read
case "$rc $out" in "2 error: --io=read: IO_ERROR: "*) ;; *) echo "FAIL: --opt=VALUE after --: $rc $out"; fail=1;; esac
out=$(printf 'lm_head.scale\r\nzz\n' | $RUNNER "$CLI" keys "$T/s.safetensors" --expect=- 2>"$T/err"); rc=$?
check "keys --expect -" "1 missing: zz" "$rc $(printf '%s\n' "$out" | head -n 1)"

# CMD --help describes that command on stdout (options, exit codes, an example) and exits 0,
# as --help does; after "--" it is a PATH
for c in inspect verify load keys convert show hash sample; do
    run $RUNNER "$CLI" $c "$T/s.safetensors" --help
    case "$rc $out" in "0 usage: safeload $c "*"exit: "*"example: safeload $c "*) ;; *) echo "FAIL: $c --help: $rc $out"; fail=1;; esac
done
run $RUNNER "$CLI" hash -h; case "$out" in *"sha256sum"*"--tensors "*) ;; *) echo "FAIL: hash -h: $out"; fail=1;; esac
run $RUNNER "$CLI" --help
case "$rc $out" in "0 usage:"*"safeload sample OUT"*"safeload CMD --help"*) ;; *) echo "FAIL: --help: $rc $out"; fail=1;; esac
run $RUNNER "$CLI" verify -- --help; check "verify -- --help exit" 2 "$rc"

# "(byte N)" is left out only where the message says "at byte N" itself, not where a quoted
# path holds "byte N" (the index of a directory named "byte 131")
mkdir "$T/byte 131"; cp "$T/s.safetensors" "$T/byte 131/m.safetensors"
printf '{"weight_map":{"lm_head.scale":"m.safetensors"}}' > "$T/byte 131/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/byte 131"
check "offset beside a path holding it" "warning: $T/byte 131/m.safetensors: INDEX_UNLISTED_TENSOR: tensor is in this shard but not in $T/byte 131/model.safetensors.index.json's weight_map; it is left out of the model [tensor model.norm.weight] (byte 131)" "$(head -n 1 "$T/err")"

# failures a root-run test cannot cause with permissions, through tests/fail_io.c
# convert: every tensor into one file, cast where a cast exists, metadata kept
run $RUNNER "$CLI" convert "$T/s.safetensors" "$T/c32.safetensors" --dtype f32
check "convert f32" "0 wrote $T/c32.safetensors: 6 tensors, 14468 bytes of data (5 cast to F32, 1 as stored)" "$rc $out"
run $RUNNER "$CLI" inspect --json "$T/c32.safetensors"; out=$(printf '%s' "$out" | layout)
check "convert f32 layout" '{"header_bytes":560,"data_bytes":14468,"metadata":{"format":"pt","source":"safeload sample"},"tensors":[{"name":"empty.bias","dtype":"F32","shape":[0],"data_offsets":[0,0]},{"name":"lm_head.scale","dtype":"F32","shape":[],"data_offsets":[0,4]},{"name":"model.embed_tokens.weight","dtype":"F32","shape":[64,32],"data_offsets":[4,8196]},{"name":"model.layers.0.mlp.experts.3.up_proj.weight","dtype":"F32","shape":[16,32],"data_offsets":[8196,10244]},{"name":"model.layers.0.self_attn.q_proj.weight","dtype":"F32","shape":[32,32],"data_offsets":[10244,14340]},{"name":"model.norm.weight","dtype":"F32","shape":[32],"data_offsets":[14340,14468]}]}' "$out"
# the values, against an independent decoding of the sample's BF16, F16, F64, E4M3 and F32
if command -v python3 > /dev/null 2>&1; then
    vals=$(python3 - "$T/s.safetensors" "$T/c32.safetensors" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: (v["dtype"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
def e4m3(x):
    s, e, m = x >> 7, (x >> 3) & 15, x & 7
    v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if s else v
src, dst = tensors(sys.argv[1]), tensors(sys.argv[2])
bad = 0
for k, (dt, raw) in src.items():
    if dt == "BF16": want = b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2))
    elif dt == "F16": want = b"".join(struct.pack("<f", struct.unpack("<e", raw[i:i + 2])[0]) for i in range(0, len(raw), 2))
    elif dt == "F64": want = b"".join(struct.pack("<f", struct.unpack("<d", raw[i:i + 8])[0]) for i in range(0, len(raw), 8))
    elif dt == "F8_E4M3": want = b"".join(struct.pack("<f", e4m3(x)) for x in raw)
    else: want = raw
    bad += dst[k] != ("F32", want)
print("%d tensors, %d differ" % (len(src), bad))
PY
)
    check "convert f32 values" "6 tensors, 0 differ" "$vals"
fi
# as stored, the writer's canonical bytes come back: the sample itself, and the F32 file
run $RUNNER "$CLI" convert "$T/c32.safetensors" "$T/c32b.safetensors"
check "convert as stored" "0 wrote $T/c32b.safetensors: 6 tensors, 14468 bytes of data (as stored)" "$rc $out"
cmp -s "$T/c32.safetensors" "$T/c32b.safetensors" || { echo "FAIL: convert as stored changed the bytes"; fail=1; }
run $RUNNER "$CLI" convert "$T/s.safetensors" "$T/s2.safetensors"
cmp -s "$T/s.safetensors" "$T/s2.safetensors" || { echo "FAIL: convert of the sample changed it"; fail=1; }
# --align-data: the same JSON and bytes, the header padded with spaces to end at byte 4096
run $RUNNER "$CLI" convert "$T/c32.safetensors" "$T/c32al.safetensors" --align-data
check "convert --align-data" "0 wrote $T/c32al.safetensors: 6 tensors, 14468 bytes of data (as stored)" "$rc $out"
run $RUNNER "$CLI" inspect --json "$T/c32al.safetensors"; out=$(printf '%s' "$out" | layout)
check "convert --align-data layout" '{"header_bytes":4088,"data_bytes":14468,"metadata":{"format":"pt","source":"safeload sample"},"tensors":[{"name":"empty.bias","dtype":"F32","shape":[0],"data_offsets":[0,0]},{"name":"lm_head.scale","dtype":"F32","shape":[],"data_offsets":[0,4]},{"name":"model.embed_tokens.weight","dtype":"F32","shape":[64,32],"data_offsets":[4,8196]},{"name":"model.layers.0.mlp.experts.3.up_proj.weight","dtype":"F32","shape":[16,32],"data_offsets":[8196,10244]},{"name":"model.layers.0.self_attn.q_proj.weight","dtype":"F32","shape":[32,32],"data_offsets":[10244,14340]},{"name":"model.norm.weight","dtype":"F32","shape":[32],"data_offsets":[14340,14468]}]}' "$out"
head -c 568 "$T/c32al.safetensors" | tail -c 560 > "$T/h2"; head -c 568 "$T/c32.safetensors" | tail -c 560 > "$T/h1"
cmp -s "$T/h1" "$T/h2" || { echo "FAIL: convert --align-data changed the header's JSON"; fail=1; }
check "convert --align-data pad" "0" "$(head -c 4096 "$T/c32al.safetensors" | tail -c 3528 | tr -d ' ' | wc -c | tr -d ' ')"
tail -c 14468 "$T/c32.safetensors" > "$T/d1"; tail -c 14468 "$T/c32al.safetensors" > "$T/d2"
cmp -s "$T/d1" "$T/d2" || { echo "FAIL: convert --align-data changed the data"; fail=1; }
run $RUNNER "$CLI" load "$T/c32al.safetensors" --io direct --checksum
check "convert --align-data loads" "0" "$rc"
# shards merged into one file (the first shard's metadata: none here)
run $RUNNER "$CLI" convert --dtype=bf16 "$T/two" "$T/merged.safetensors"
check "convert shards" "0 wrote $T/merged.safetensors: 2 tensors, 3 bytes of data (as stored)" "$rc $out"
run $RUNNER "$CLI" inspect --json "$T/merged.safetensors"; out=$(printf "%s" "$out" | layout)
check "convert shards layout" '{"header_bytes":112,"data_bytes":3,"metadata":null,"tensors":[{"name":"y","dtype":"U8","shape":[2],"data_offsets":[0,2]},{"name":"z","dtype":"U8","shape":[1],"data_offsets":[2,3]}]}' "$out"
check "convert shards data" "yyx" "$(tail -c 3 "$T/merged.safetensors")"
# in place (the file is replaced atomically after the load), and the errors
cp "$T/s.safetensors" "$T/inplace.safetensors"
run $RUNNER "$CLI" convert "$T/inplace.safetensors" "$T/inplace.safetensors" --dtype bf16
check "convert in place" "0 wrote $T/inplace.safetensors: 6 tensors, 7240 bytes of data (4 cast to BF16, 2 as stored)" "$rc $out"
run $RUNNER "$CLI" verify "$T/inplace.safetensors"; check "convert in place verifies" "ok: $T/inplace.safetensors: 6 tensors, 7240 bytes" "$out"
run $RUNNER "$CLI" convert "$T/trail.safetensors" "$T/x.safetensors"
case "$rc $(err)" in "1 error: $T/trail.safetensors: INCOMPLETE_BUFFER: "*) ;; *) echo "FAIL: convert invalid: $rc $(err)"; fail=1;; esac
[ -e "$T/x.safetensors" ] && { echo "FAIL: convert of an invalid file wrote one"; fail=1; }
run $RUNNER "$CLI" convert "$T/s.safetensors" "$T"
case "$rc $(err)" in "2 error: $T: INVALID_ARGUMENT: "*) ;; *) echo "FAIL: convert onto a directory: $rc $(err)"; fail=1;; esac
for a in "convert|error: convert needs a PATH and an OUT path" "convert a|error: convert needs an OUT path" \
         "convert a b c|error: unexpected argument c" "convert a b --dtype f8|error: --dtype takes f32, f16 or bf16, not f8" \
         "convert a b --dtype|error: a value is missing after --dtype" "convert a b --io read|error: unknown option --io"; do
    run $RUNNER "$CLI" ${a%%|*}; check "usage: ${a%%|*}" "2 ${a#*|}" "$rc $(head -n 1 "$T/err")"
done

# convert streams and shards. --dtype spellings: each names the same cast
for a in "f32 fp32 FP32 float32 float F32" "f16 fp16 float16 half Half" "bf16 bfloat16 BF16 BFloat16"; do
    run $RUNNER "$CLI" load "$T/s.safetensors" --dtype ${a%% *} --checksum; want=$(printf '%s\n' "$out" | tail -n 1)
    run $RUNNER "$CLI" convert "$T/s.safetensors" "$T/sp.safetensors" --dtype ${a%% *}
    for d in ${a#* }; do
        run $RUNNER "$CLI" load "$T/s.safetensors" --dtype "$d" --checksum
        check "load --dtype $d" "0 $want" "$rc $(printf '%s\n' "$out" | tail -n 1)"
        run $RUNNER "$CLI" convert "$T/s.safetensors" "$T/sp2.safetensors" --dtype "$d"
        cmp -s "$T/sp.safetensors" "$T/sp2.safetensors" || { echo "FAIL: convert --dtype $d"; fail=1; }
    done
done
# the reference implementation's own files come back byte for byte, directly and through shards
R=tests/data/reference
for f in all_dtypes metadata mixed_named f16_1mib; do
    run $RUNNER "$CLI" convert "$R/$f.safetensors" "$T/ref.safetensors"
    cmp -s "$R/$f.safetensors" "$T/ref.safetensors" || { echo "FAIL: convert of reference $f changed it"; fail=1; }
    rm -rf "$T/refsh"
    run $RUNNER "$CLI" convert "$R/$f.safetensors" "$T/refsh" --max-shard-size 600
    run $RUNNER "$CLI" convert "$T/refsh" "$T/ref2.safetensors"
    cmp -s "$R/$f.safetensors" "$T/ref2.safetensors" || { echo "FAIL: reference $f through shards: $rc $(err)"; fail=1; }
done
# save_pretrained's split, in data order: the 4096-byte tensor is over 2100 bytes and gets a file
# of its own, placed before the file being filled; a new file when the next would pass the size
run $RUNNER "$CLI" convert "$R/mixed_named.safetensors" "$T/mn" --max-shard-size 2100B
check "convert sharded" "0 wrote $T/mn: 4 shards and model.safetensors.index.json, 7 tensors, 6856 bytes of data (as stored)" "$rc $out"
check "convert sharded files" "model-00001-of-00004.safetensors model-00002-of-00004.safetensors model-00003-of-00004.safetensors model-00004-of-00004.safetensors model.safetensors.index.json" "$(ls -A "$T/mn" | tr '\n' ' ' | sed 's/ $//')"
check "convert sharded index" '{
  "metadata": {
    "total_size": 6856
  },
  "weight_map": {
    "empty.bias": "model-00003-of-00004.safetensors",
    "lm_head.scale": "model-00002-of-00004.safetensors",
    "model.embed_tokens.weight": "model-00001-of-00004.safetensors",
    "model.layers.0.mlp.experts.3.up_proj.weight": "model-00004-of-00004.safetensors",
    "model.layers.0.self_attn.q_proj.weight": "model-00003-of-00004.safetensors",
    "model.norm.weight": "model-00002-of-00004.safetensors",
    "t.000000": "model-00002-of-00004.safetensors"
  }
}' "$(cat "$T/mn/model.safetensors.index.json")"
[ "$(tail -c 1 "$T/mn/model.safetensors.index.json" | od -An -c | tr -d ' ')" = '\n' ] || { echo "FAIL: index ends without a newline"; fail=1; }
run $RUNNER "$CLI" inspect --json "$T/mn/model-00002-of-00004.safetensors"; out=$(printf "%s" "$out" | layout)
check "convert shard layout" '{"header_bytes":208,"data_bytes":200,"metadata":null,"tensors":[{"name":"lm_head.scale","dtype":"F64","shape":[],"data_offsets":[0,8]},{"name":"model.norm.weight","dtype":"F32","shape":[32],"data_offsets":[8,136]},{"name":"t.000000","dtype":"F32","shape":[4,4],"data_offsets":[136,200]}]}' "$out"
run $RUNNER "$CLI" verify --strict "$T/mn"; check "convert sharded verifies (strict: total_size too)" "0 ok: $T/mn: 7 tensors, 6856 bytes" "$rc $out"
# the same tensors, whatever the files: hash --tensors lists them alike
run $RUNNER "$CLI" hash --tensors "$R/mixed_named.safetensors"; want=$out
run $RUNNER "$CLI" hash --tensors "$T/mn"; check "convert sharded: hash --tensors" "0 $want" "$rc $out"
# a file exactly the size is full, not over it: 2 x 524288 bytes in each of 2 files
run $RUNNER "$CLI" convert "$R/bf16_2mib.safetensors" "$T/exact" --max-shard-size 1048576
check "convert shards exactly full" "0 wrote $T/exact: 2 shards and model.safetensors.index.json, 4 tensors, 2097152 bytes of data (as stored)" "$rc $out"
# round trips with casts: single -> sharded (f32) -> sharded (bf16) -> single, against the same
# casts file to file (F64 casts to F32 only: the way through F32 matters)
run $RUNNER "$CLI" convert "$R/mixed_named.safetensors" "$T/rt1" --max-shard-size 5KB --dtype fp32
check "convert sharded cast" "0 wrote $T/rt1: 3 shards and model.safetensors.index.json, 7 tensors, 14532 bytes of data (5 cast to F32, 2 as stored)" "$rc $out"
run $RUNNER "$CLI" convert "$T/rt1" "$T/rt2" --max-shard-size 3KiB --dtype bfloat16
run $RUNNER "$CLI" convert "$T/rt2" "$T/rt.safetensors"
run $RUNNER "$CLI" convert "$R/mixed_named.safetensors" "$T/direct32.safetensors" --dtype f32
run $RUNNER "$CLI" convert "$T/direct32.safetensors" "$T/direct.safetensors" --dtype bf16
cmp -s "$T/rt.safetensors" "$T/direct.safetensors" || { echo "FAIL: convert round trip through shards and casts"; fail=1; }
run $RUNNER "$CLI" hash --tensors "$T/direct.safetensors"; want=$out
run $RUNNER "$CLI" hash --tensors "$T/rt2"; check "convert round trip: hash --tensors" "0 $want" "$rc $out"
# ... and tensor by tensor: the shards hold exactly the single file's tensors
if command -v python3 > /dev/null 2>&1; then
    vals=$(python3 - "$T/direct.safetensors" "$T/rt2" <<'PY'
import json, os, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
one = tensors(sys.argv[1])
idx = json.load(open(os.path.join(sys.argv[2], "model.safetensors.index.json")))
got = {}
for f in sorted(set(idx["weight_map"].values())):
    for k, v in tensors(os.path.join(sys.argv[2], f)).items():
        got[k] = v
        if idx["weight_map"][k] != f: print("misplaced", k)
print("%d tensors, %d differ, total_size %s" % (len(one), sum(got.get(k) != v for k, v in one.items()) + len(set(got) - set(one)),
      "ok" if idx["metadata"]["total_size"] == sum(len(v[2]) for v in one.values()) else "wrong"))
PY
)
    check "convert shards tensor by tensor" "7 tensors, 0 differ, total_size ok" "$vals"
fi
# everything within the size: one file, model.safetensors, no index (as save_pretrained)
run $RUNNER "$CLI" convert "$T/s.safetensors" "$T/whole" --max-shard-size 5GB
check "convert one shard" "0 wrote $T/whole/model.safetensors: 6 tensors, 6792 bytes of data (as stored)" "$rc $out"
cmp -s "$T/s.safetensors" "$T/whole/model.safetensors" || { echo "FAIL: convert into one shard changed the bytes"; fail=1; }
# names JSON must escape: the shards' headers as the reference writes them (serde_json, raw
# UTF-8), the index as transformers writes it (json.dumps, ASCII with \u escapes)
mk "$T/names.safetensors" '{"__metadata__":{"z":"1","a\"\\":"\u0001\u00e9"},"q\"uo\\te":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"\u00e9t\u00e9":{"dtype":"I8","shape":[1],"data_offsets":[1,2]},"\ud83d\ude00":{"dtype":"U8","shape":[1],"data_offsets":[2,3]},"c\u0001\u001f\u007f\n":{"dtype":"U8","shape":[1],"data_offsets":[3,4]},"\u2028":{"dtype":"F16","shape":[1],"data_offsets":[4,6]}}' abcdef
rm -rf "$T/nm"; run $RUNNER "$CLI" convert "$T/names.safetensors" "$T/nm" --max-shard-size 1
check "convert escaped names" "0 wrote $T/nm: 5 shards and model.safetensors.index.json, 5 tensors, 6 bytes of data (as stored)" "$rc $out"
if command -v python3 > /dev/null 2>&1; then
    vals=$(python3 - "$T/nm" <<'PY'
import json, os, struct, sys
ORDER = "U64 I64 F64 C64 F32 U32 I32 BF16 F16 U16 I16 F8_E5M2FNUZ F8_E4M3FNUZ F8_E8M0 F8_E4M3 F8_E5M2 I8 U8 F6_E3M2 F6_E2M3 F4 BOOL".split()
d = sys.argv[1]
raw = open(os.path.join(d, "model.safetensors.index.json"), "rb").read()
idx = json.loads(raw)
bad = raw != (json.dumps(idx, indent=2, sort_keys=True) + "\n").encode()
names = set()
for f in sorted(set(idx["weight_map"].values())):
    b = open(os.path.join(d, f), "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__")
    names |= set(h)
    out = {"__metadata__": dict(sorted(meta.items(), key=lambda kv: kv[0].encode()))}
    off = 0
    for k in sorted(h, key=lambda k: (ORDER.index(h[k]["dtype"]), k.encode())):
        size = h[k]["data_offsets"][1] - h[k]["data_offsets"][0]
        out[k] = {"dtype": h[k]["dtype"], "shape": h[k]["shape"], "data_offsets": [off, off + size]}
        off += size
    j = json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode()
    j += b" " * (-len(j) % 8)
    bad += b[:8 + n] != struct.pack("<Q", len(j)) + j
bad += names != set(idx["weight_map"])
print("%d files, %d differ" % (len(idx["weight_map"]) + 1, bad))
PY
)
    check "convert escaped headers and index" "6 files, 0 differ" "$vals"
fi
# OUT: a symlink is followed (the link stays), a replaced file keeps its permissions
cp "$T/s.safetensors" "$T/perm.safetensors"; chmod 600 "$T/perm.safetensors"; ln -s perm.safetensors "$T/link.safetensors"
run $RUNNER "$CLI" convert "$R/metadata.safetensors" "$T/link.safetensors"
check "convert onto a symlink" "0 wrote $T/link.safetensors: 3 tensors, 72 bytes of data (as stored)" "$rc $out"
[ -L "$T/link.safetensors" ] && cmp -s "$R/metadata.safetensors" "$T/perm.safetensors" || { echo "FAIL: convert onto a symlink"; fail=1; }
case "$(ls -l "$T/perm.safetensors")" in -rw-------*) ;; *) echo "FAIL: convert changed the permissions"; fail=1;; esac
# OUT that cannot be written fails before anything is read: the error names OUT even where
# PATH is missing, and nothing is left
run $RUNNER "$CLI" convert "$T/missing.safetensors" "$T/s.safetensors/x.safetensors"
case "$rc $(err)" in "2 error: $T/s.safetensors/x.safetensors: IO_ERROR: cannot create a file there: "*) ;; *) echo "FAIL: convert to an unwritable OUT: $rc $(err)"; fail=1;; esac
run $RUNNER "$CLI" convert "$T/missing.safetensors" "$T/nodir/deeper" --max-shard-size 1GB
case "$rc $(err)" in "2 error: $T/nodir/deeper: IO_ERROR: cannot make the folder: "*) ;; *) echo "FAIL: convert to an unmakeable folder: $rc $(err)"; fail=1;; esac
run $RUNNER "$CLI" convert "$T/s.safetensors" "$T/u8.safetensors" --max-shard-size 1GB
case "$rc $(err)" in "2 error: $T/u8.safetensors: INVALID_ARGUMENT: --max-shard-size writes a folder"*) ;; *) echo "FAIL: sharded convert onto a file: $rc $(err)"; fail=1;; esac
# an invalid source: nothing left, and a folder convert made is removed
run $RUNNER "$CLI" convert "$T/trail.safetensors" "$T/newdir" --max-shard-size 1GB
check "sharded convert of an invalid file" "1 no" "$rc $([ -e "$T/newdir" ] && echo yes || echo no)"
for a in "convert a b --max-shard-size 5Gb|error: --max-shard-size takes a size such as 5GB, 500MB, 2GiB or bytes, not 5Gb" \
         "convert a b --max-shard-size 0|error: --max-shard-size takes a size such as 5GB, 500MB, 2GiB or bytes, not 0" \
         "convert a b --max-shard-size 5XB|error: --max-shard-size takes a size such as 5GB, 500MB, 2GiB or bytes, not 5XB" \
         "convert a b --max-shard-size|error: a value is missing after --max-shard-size"; do
    run $RUNNER "$CLI" ${a%%|*}; check "usage: ${a%%|*}" "2 ${a#*|}" "$rc $(head -n 1 "$T/err")"
done
# a signal at any moment of a write leaves no temporary and no partial set: at each point of
# the test hook (OUT checked; the first batch written; the first file written; half the
# index written) nothing is left, not even the folder convert made; during the renames the
# signal waits, and the set is complete
if [ -z "$RUNNER" ]; then
    for p in open data between index rename; do
        for s in 2 15 1; do
            rm -rf "$T/sig"
            SAFELOAD_CONVERT_TEST_SIGNAL=$p:$s "$CLI" convert "$R/mixed_named.safetensors" "$T/sig" --max-shard-size 2100 > /dev/null 2>&1
            rc=$?
            left=$(ls -A "$T/sig" 2>/dev/null | tr '\n' ' ')
            if [ $p = rename ]; then
                check "signal $s at $p" "$((128 + s)) model-00001-of-00004.safetensors model-00002-of-00004.safetensors model-00003-of-00004.safetensors model-00004-of-00004.safetensors model.safetensors.index.json " "$rc $left"
            else
                check "signal $s at $p" "$((128 + s)) gone" "$rc $left$([ -e "$T/sig" ] || echo gone)"
            fi
        done
    done
    # one file replaced: at each point the old file stays as it was, and no temporary is left
    mkdir "$T/sig1"; cp "$T/s.safetensors" "$T/sig1/o.safetensors"
    for p in open data between rename; do
        SAFELOAD_CONVERT_TEST_SIGNAL=$p:15 "$CLI" convert "$R/mixed_named.safetensors" "$T/sig1/o.safetensors" > /dev/null 2>&1
        rc=$?
        if [ $p = rename ]; then cmp -s "$T/sig1/o.safetensors" "$R/mixed_named.safetensors" && left=new || left=old
        else cmp -s "$T/sig1/o.safetensors" "$T/s.safetensors" && left=old || left=new; fi
        check "one file, signal at $p" "143 o.safetensors $([ $p = rename ] && echo new || echo old)" "$rc $(ls -A "$T/sig1") $left"
    done
fi

# convert on a full disk, and a rename that fails: nothing is left (fail_io.so), and a big
# model converts in memory near one shard (peak RSS measured: a 200 MB file, 20 MB shards)
if [ -z "$RUNNER" ] && [ -n "${FAIL_IO:-}" ]; then
    for at in 100 3000 7000; do
        rm -rf "$T/full"
        run env SL_FAIL_WRITE_AFTER=$at LD_PRELOAD="$FAIL_IO" "$CLI" convert "$R/mixed_named.safetensors" "$T/full" --max-shard-size 2100
        case "$rc $(err)" in "2 error: $T/full/model-0000"*"-of-00004.safetensors: IO_ERROR: writing failed: No space left on device (error 28)") ;;
            *) echo "FAIL: convert on a full disk after $at bytes: $rc $(err)"; fail=1;; esac
        [ -e "$T/full" ] && { echo "FAIL: convert on a full disk left $(ls -A "$T/full")"; fail=1; }
    done
    mkdir "$T/full1"; cp "$T/s.safetensors" "$T/full1/o.safetensors"
    run env SL_FAIL_WRITE_AFTER=1000 LD_PRELOAD="$FAIL_IO" "$CLI" convert "$R/mixed_named.safetensors" "$T/full1/o.safetensors"
    check "one file on a full disk" "2 error: $T/full1/o.safetensors: IO_ERROR: writing failed: No space left on device (error 28) o.safetensors" "$rc $(err) $(ls -A "$T/full1")"
    cmp -s "$T/s.safetensors" "$T/full1/o.safetensors" || { echo "FAIL: convert on a full disk touched OUT"; fail=1; }
    # the third file's rename fails: the two renamed before it go too, and the index never came
    rm -rf "$T/ren"
    run env SL_FAIL_RENAME=model-00003-of-00004.safetensors LD_PRELOAD="$FAIL_IO" "$CLI" convert "$R/mixed_named.safetensors" "$T/ren" --max-shard-size 2100
    check "a rename fails" "2 error: $T/ren/model-00003-of-00004.safetensors: IO_ERROR: cannot rename the temporary into place: Input/output error (error 5) gone" "$rc $(err) $(ls -A "$T/ren" 2>/dev/null)$([ -e "$T/ren" ] || echo gone)"
    if command -v python3 > /dev/null 2>&1; then
        python3 -c 'import sys, struct, json; n = 50; sz = 4 << 20; h = {"t.%03d" % i: {"dtype": "BF16", "shape": [sz // 2], "data_offsets": [i * sz, (i + 1) * sz]} for i in range(n)}; b = json.dumps(h, separators=(",", ":")).encode(); b += b" " * (-len(b) % 8); f = open(sys.argv[1], "wb"); f.write(struct.pack("<Q", len(b)) + b); [f.write(bytes(range(256)) * (sz // 256)) for i in range(n)]' "$T/big200.safetensors"
        # the exit status and the peak RSS in MiB of a command (Linux: ru_maxrss in KiB); its
        # stderr in $T/peak.err
        peak() { python3 -c 'import resource, subprocess, sys; rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], "w")).returncode; print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$T/peak.err" "$@"; }
        set -- $(peak "$CLI" convert "$T/big200.safetensors" "$T/bigsh" --max-shard-size 20MB --progress)
        echo "convert 200 MB into 20 MB shards: peak RSS $2 MiB"
        [ "$1" = 0 ] && [ "$2" -lt 48 ] || { echo "FAIL: convert into 20 MB shards: exit $1, peak RSS $2 MiB"; fail=1; }
        case "$(tr '\r' '\n' < "$T/peak.err" | tail -n 1)" in "["*"] 100%  0.21 / 0.21 GB"*) ;; *) echo "FAIL: convert --progress: $(cat "$T/peak.err")"; fail=1;; esac
        check "convert 200 MB: 13 shards" "14" "$(ls "$T/bigsh" | wc -l | tr -d ' ')"
        run "$CLI" hash --tensors "$T/big200.safetensors"; want=$out
        run "$CLI" hash --tensors "$T/bigsh"; check "convert 200 MB: hash --tensors" "0 $want" "$rc $out"
        set -- $(peak "$CLI" convert "$T/bigsh" "$T/big1.safetensors")
        echo "convert 200 MB in 13 shards into one file: peak RSS $2 MiB"
        [ "$1" = 0 ] && [ "$2" -lt 100 ] || { echo "FAIL: convert into one file: exit $1, peak RSS $2 MiB"; fail=1; }
        cmp -s "$T/big200.safetensors" "$T/big1.safetensors" || { echo "FAIL: 200 MB through shards changed"; fail=1; }
        # a real signal at whatever moment it lands: the set is then complete or absent
        rm -rf "$T/bigsh"
        "$CLI" convert "$T/big200.safetensors" "$T/bigsh" --max-shard-size 20MB > /dev/null 2>&1 & pid=$!
        sleep 0.3; kill -INT $pid 2>/dev/null; wait $pid; rc=$?
        case "$rc $(ls -A "$T/bigsh" 2>/dev/null | wc -l | tr -d ' ')" in "130 0"|"0 14") ;; *) echo "FAIL: SIGINT during convert: $rc, left $(ls -A "$T/bigsh")"; fail=1;; esac
        rm -rf "$T/big200.safetensors" "$T/big1.safetensors" "$T/bigsh"
    fi
fi

# show: the first values of one tensor, each the shortest decimal that reads back exactly
run $RUNNER "$CLI" show "$T/s.safetensors" model.norm.weight
check "show F32" "0 model.norm.weight: F32 [32], 32 elements, the first 16
  1 1.015625 1.03125 1.046875 1.0625 1.078125 1.09375 1.109375
  1.125 1.140625 1.15625 1.171875 1.1875 1.203125 1.21875 1.234375" "$rc $out"
run $RUNNER "$CLI" show "$T/s.safetensors" lm_head.scale; check "show F64 scalar" "0 lm_head.scale: F64 [], 1 element
  0.125" "$rc $out"
run $RUNNER "$CLI" show "$T/s.safetensors" empty.bias; check "show empty" "0 empty.bias: F16 [0], 0 elements" "$rc $out"
run $RUNNER "$CLI" show "$T/s.safetensors" model.layers.0.mlp.experts.3.up_proj.weight --count=3
check "show E4M3" "0 model.layers.0.mlp.experts.3.up_proj.weight: F8_E4M3 [16, 32], 512 elements, the first 3
  0.44 5 160" "$rc $out"
run $RUNNER "$CLI" show "$T/two" y --count 0; check "show a shard's tensor, none shown" "0 y: U8 [2], 2 elements, the first 0" "$rc $out"
run $RUNNER "$CLI" show "$T/two" y; check "show a shard's tensor" "0 y: U8 [2], 2 elements
  121 121" "$rc $out"
# every other dtype, and the specials
mk "$T/dt.safetensors" '{"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]},"i8":{"dtype":"I8","shape":[2],"data_offsets":[3,5]},"i16":{"dtype":"I16","shape":[1],"data_offsets":[5,7]},"u16":{"dtype":"U16","shape":[1],"data_offsets":[7,9]},"i32":{"dtype":"I32","shape":[1],"data_offsets":[9,13]},"u32":{"dtype":"U32","shape":[1],"data_offsets":[13,17]},"i64":{"dtype":"I64","shape":[1],"data_offsets":[17,25]},"u64":{"dtype":"U64","shape":[1],"data_offsets":[25,33]},"c":{"dtype":"C64","shape":[1],"data_offsets":[33,41]},"e8":{"dtype":"F8_E8M0","shape":[4],"data_offsets":[41,45]},"n4":{"dtype":"F8_E4M3FNUZ","shape":[4],"data_offsets":[45,49]},"n5":{"dtype":"F8_E5M2FNUZ","shape":[4],"data_offsets":[49,53]},"f4":{"dtype":"F4","shape":[2,2],"data_offsets":[53,55]},"f6":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[55,58]},"e5":{"dtype":"F8_E5M2","shape":[3],"data_offsets":[58,61]},"h":{"dtype":"F16","shape":[6],"data_offsets":[61,73]},"bf":{"dtype":"BF16","shape":[3],"data_offsets":[73,79]},"d":{"dtype":"F64","shape":[4],"data_offsets":[79,111]},"f":{"dtype":"F32","shape":[4],"data_offsets":[111,127]}}'
printf '\000\001\002\200\177\000\200\377\377\377\377\377\177\000\000\000\200\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\000\000\300\077\000\000\000\300\000\177\376\377\000\200\177\377\000\200\177\377\041\103\145\207\055\177\001\374\000\174\001\000\377\373\000\200\000\176\125\065\300\377\200\317\040\074\232\231\231\231\231\231\271\077\234\165\000\210\074\344\067\176\001\000\000\000\000\000\000\000\000\000\000\000\000\000\360\177\377\377\177\177\001\000\000\000\000\000\000\200\000\000\300\377' >> "$T/dt.safetensors"
run $RUNNER "$CLI" verify "$T/dt.safetensors"; check "show: every dtype file" 0 "$rc"
for a in "b|BOOL [3], 3 elements|false true true" "i8|I8 [2], 2 elements|-128 127" \
         "i16|I16 [1], 1 element|-32768" "u16|U16 [1], 1 element|65535" \
         "i32|I32 [1], 1 element|2147483647" "u32|U32 [1], 1 element|2147483648" \
         "i64|I64 [1], 1 element|-1" "u64|U64 [1], 1 element|18446744073709551615" \
         "c|C64 [1], 1 element|1.5-2j" "e8|F8_E8M0 [4], 4 elements|6e-39 1 2e+38 nan" \
         "n4|F8_E4M3FNUZ [4], 4 elements|0 nan 240 -240" "n5|F8_E5M2FNUZ [4], 4 elements|0 nan 60000 -60000" \
         "f4|F4 [2, 2], 4 elements|0.5 1 1.5 2" \
         "f6|F6_E2M3 [4], 4 elements, shown as 3 packed bytes|0x65 0x87 0x2d" \
         "e5|F8_E5M2 [3], 3 elements|nan 2e-05 -inf" \
         "h|F16 [6], 6 elements|inf 6e-08 -65500 -0 nan 0.3333" "bf|BF16 [3], 3 elements|-nan -4300000000 0.00977" \
         "d|F64 [4], 4 elements|0.1 1e+300 5e-324 inf" "f|F32 [4], 4 elements|3.4028235e+38 1e-45 -0 -nan"; do
    n=${a%%|*}; r=${a#*|}
    run $RUNNER "$CLI" show "$T/dt.safetensors" "$n" --count all
    check "show $n" "0 $n: ${r%%|*}
  ${r#*|}" "$rc $out"
done
run $RUNNER "$CLI" show "$T/dt.safetensors" f4 --count 1; check "show F4, one row" "0 f4: F4 [2, 2], 4 elements, the first 1
  0.5" "$rc $out"
# convert widens F4, E8M0 and the FNUZ FP8s too (F6 stays as stored), to the same values
run $RUNNER "$CLI" convert "$T/dt.safetensors" "$T/dt32.safetensors" --dtype f32
check "convert every dtype to f32" "0 wrote $T/dt32.safetensors: 19 tensors, 188 bytes of data (8 cast to F32, 11 as stored)" "$rc $out"
for a in "e8|5.877472e-39 1 1.7014118e+38 nan" "n4|0 nan 240 -240" "n5|0 nan 57344 -57344" "f4|0.5 1 1.5 2"; do
    n=${a%%|*}
    run $RUNNER "$CLI" show "$T/dt32.safetensors" "$n" --count all
    check "convert $n to f32" "0 ${a#*|}" "$rc $(printf '%s\n' "$out" | tail -n 1 | sed 's/^ *//')"
done
run $RUNNER "$CLI" show "$T/dt.safetensors" f6 --count 1; check "show F6, packed" "0 f6: F6_E2M3 [4], 4 elements, shown as 1 packed byte
  0x65" "$rc $out"
# only the rows that hold the values are read: the same values as from the whole tensor
run $RUNNER "$CLI" show "$T/s.safetensors" model.embed_tokens.weight --count all; all=$(printf '%s\n' "$out" | tail -n +2 | tr -s ' \n' '  ')
run $RUNNER "$CLI" show "$T/s.safetensors" model.embed_tokens.weight --count 40
check "show 40 of 2048" "0 model.embed_tokens.weight: BF16 [64, 32], 2048 elements, the first 40" "$rc $(printf '%s\n' "$out" | head -n 1)"
check "show 40: the first 40 of all" "$(printf '%s\n' "$all" | cut -d ' ' -f 2-41)" "$(printf '%s\n' "$out" | tail -n +2 | tr -s ' \n' '  ' | cut -d ' ' -f 2-41)"
# --slice DIM:BEGIN:END: columns 4 and 5 of each row (elements 4, 5, 36, 37, 68, 69 of all)
run $RUNNER "$CLI" show "$T/s.safetensors" model.embed_tokens.weight --slice 1:4:6 --count 6
check "show --slice" "0 model.embed_tokens.weight: BF16 [64, 32], 2048 elements, slice [4, 6) of dimension 1: 128 elements, the first 6" "$rc $(printf '%s\n' "$out" | head -n 1)"
check "show --slice: its values" "$(printf '%s\n' "$all" | cut -d ' ' -f 6,7,38,39,70,71)" "$(printf '%s\n' "$out" | tail -n +2 | tr -s ' \n' '  ' | cut -d ' ' -f 2-7)"
run $RUNNER "$CLI" show "$T/s.safetensors" model.embed_tokens.weight --slice 1:4:4
check "show --slice empty" "1 error: $T/s.safetensors: INVALID_SLICE: request 0: an empty slice [4, 4) of dimension 1, which has 32 entries [tensor model.embed_tokens.weight] (byte 203)" "$rc $(err)"
run $RUNNER "$CLI" load "$T/s.safetensors" --slice 1:0:16
check "load --slice" "0 sliced: 3 of 6 tensors, [0, 16) of dimension 1 (the rest whole)" "$rc $(printf '%s\n' "$out" | head -n 1)"
run $RUNNER "$CLI" load "$T/s.safetensors" --slice 1:16; check "load --slice bad" "2 error: --slice takes DIM:BEGIN:END, not 1:16" "$rc $(err | head -n 1)"
# every value of the sample, against an independent oracle: exact rational rounding to the
# dtype, Python's own formatting; each printed value must read back as the stored one, and
# no shorter one may
if command -v python3 > /dev/null 2>&1; then
    for n in lm_head.scale model.norm.weight model.embed_tokens.weight model.layers.0.self_attn.q_proj.weight model.layers.0.mlp.experts.3.up_proj.weight; do
        run $RUNNER "$CLI" show "$T/s.safetensors" $n --count all; printf '%s\n' "$out" > "$T/show_$n.txt"
    done
    vals=$(python3 - "$T/s.safetensors" "$T" <<'PY'
import json, math, struct, sys
from decimal import Decimal
from fractions import Fraction
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
FMT = {"F64": (52, -1022, 8), "F32": (23, -126, 4), "F16": (10, -14, 2), "BF16": (7, -126, 2), "F8_E4M3": (3, -6, 1)}
def value(dt, raw):
    if dt == "F64": return struct.unpack("<d", raw)[0]
    if dt == "F32": return struct.unpack("<f", raw)[0]
    if dt == "F16": return struct.unpack("<e", raw)[0]
    if dt == "BF16": return struct.unpack("<f", b"\0\0" + raw)[0]
    x = raw[0]; s, e, m = x >> 7, (x >> 3) & 15, x & 7
    v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if s else v
def rounds_to(text, v, mb, emin):      # the decimal, rounded to nearest-even in the dtype
    q = Fraction(text)
    if q == 0: return v == 0
    e = math.floor(math.log2(abs(q)))
    while Fraction(2) ** e > abs(q): e -= 1
    while Fraction(2) ** (e + 1) <= abs(q): e += 1
    e = max(e, emin)
    s = q / Fraction(2) ** (e - mb)
    r = math.floor(s); d = s - r
    if d > Fraction(1, 2) or (d == Fraction(1, 2) and r % 2): r += 1
    return Fraction(r) * Fraction(2) ** (e - mb) == Fraction(v)
bad = total = 0
for name, t in h.items():
    if name == "empty.bias": continue
    mb, emin, w = FMT[t["dtype"]]
    raw = b[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]]
    got = open(sys.argv[2] + "/show_" + name + ".txt").read().split("\n", 1)[1].split()
    vals = [value(t["dtype"], raw[i:i + w]) for i in range(0, len(raw), w)]
    bad += len(got) != len(vals)
    for text, v in zip(got, vals):
        total += 1
        p = next(p for p in range(1, 18) if rounds_to("%.*e" % (p - 1, v), v, mb, emin))
        x = int(("%.*e" % (p - 1, v)).split("e")[1])
        want = format(Decimal("%.*e" % (p - 1, v)), "f") if -4 <= x < 16 else "%.*e" % (p - 1, v)
        bad += text != want or not rounds_to(text, v, mb, emin)
print("%d values, %d wrong" % (total, bad))
PY
)
    check "show: every sample value" "3617 values, 0 wrong" "$vals"
fi
run $RUNNER "$CLI" show "$T/s.safetensors" no.such.tensor
check "show: no such tensor" "1 error: $T/s.safetensors: NOT_FOUND: no tensor named no.such.tensor" "$rc $(err)"
run $RUNNER "$CLI" show "$T/trail.safetensors" x
case "$rc $(err)" in "1 error: $T/trail.safetensors: INCOMPLETE_BUFFER: "*) ;; *) echo "FAIL: show invalid: $rc $(err)"; fail=1;; esac
for a in "show|error: show needs a PATH and a tensor NAME" "show a|error: show needs a tensor NAME" \
         "show a b c|error: unexpected argument c" "show a b --count -1|error: --count takes a whole number or all, not -1" \
         "show a b --count|error: a value is missing after --count" "show a b --dtype f32|error: unknown option --dtype"; do
    run $RUNNER "$CLI" ${a%%|*}; check "usage: ${a%%|*}" "2 ${a#*|}" "$rc $(head -n 1 "$T/err")"
done

# ---- NOT_SAFETENSORS: what a file is when it is not safetensors (exit 1, the fix named) ----
mkdir "$T/kinds"
printf '<!DOCTYPE html>\n<html><body>Sign in</body></html>\n' > "$T/kinds/html.safetensors"
printf '\n  <HTML><body>404</body></HTML>' > "$T/kinds/html2.safetensors"
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%064d\nsize 1339\n' 0 > "$T/kinds/lfs.safetensors"
printf 'PK\003\004\024\000\000\000\010\000archive/data.pkl' > "$T/kinds/zip.safetensors"
printf '\200\002\212\012l\374\234F\371 j\250P\031.\200\002M\351\003.' > "$T/kinds/pickle.safetensors"
printf 'GGUF\003\000\000\000\002\000\000\000\000\000\000\000' > "$T/kinds/gguf.safetensors"
printf "\\223NUMPY\\001\\000v\\000{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" > "$T/kinds/npy.safetensors"
for k in "html|an HTML page, not safetensors: the download failed" "html2|an HTML page" \
         "lfs|a Git LFS pointer, not safetensors: the weights were not downloaded; run \`git lfs pull\`" \
         "zip|a ZIP archive, not safetensors: a PyTorch checkpoint" "pickle|a Python pickle (protocol 2)" \
         "gguf|a GGUF file (llama.cpp), not safetensors" "npy|a NumPy .npy array, not safetensors"; do
    f="$T/kinds/${k%%|*}.safetensors"
    run $RUNNER "$CLI" verify "$f"
    case "$rc $out" in "1 error: $f: NOT_SAFETENSORS: ${k#*|}"*"(byte 0)") ;;
        *) echo "FAIL: NOT_SAFETENSORS verify ${k%%|*}: $rc $out"; fail=1;; esac
    run $RUNNER "$CLI" load "$f"
    case "$rc $(err)" in "1 error: $f: NOT_SAFETENSORS: ${k#*|}"*) ;;
        *) echo "FAIL: NOT_SAFETENSORS load ${k%%|*}: $rc $(err)"; fail=1;; esac
done
# a shard of a model that is an LFS pointer: named, with the shard
mkdir "$T/lfsm"; cp "$T/s.safetensors" "$T/lfsm/a.safetensors"; cp "$T/kinds/lfs.safetensors" "$T/lfsm/b.safetensors"
printf '{"weight_map":{"lm_head.scale":"a.safetensors","x":"b.safetensors"}}' > "$T/lfsm/model.safetensors.index.json"
run $RUNNER "$CLI" inspect "$T/lfsm"
case "$rc $(err)" in "1 error: $T/lfsm/b.safetensors: NOT_SAFETENSORS: a Git LFS pointer"*) ;;
    *) echo "FAIL: NOT_SAFETENSORS shard: $rc $(err)"; fail=1;; esac
# a valid file whose header length reads as a pickle's start (80 02 00 ...: 640 bytes) loads
hdr='{"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}'
pad=$(printf '%*s' $((640 - ${#hdr})) '')
mk "$T/p640.safetensors" "$hdr$pad" ab
check "pickle-looking length" "80 02 00" "$(od -An -tx1 -N3 "$T/p640.safetensors" | tr -s ' ' | sed 's/^ //')"
run $RUNNER "$CLI" verify "$T/p640.safetensors"; check "pickle-looking valid file" "0 ok: $T/p640.safetensors: 1 tensor, 2 bytes" "$rc $out"
mk "$T/p640c.safetensors" "$hdr$pad" a       # cut: its own error, not NOT_SAFETENSORS
run $RUNNER "$CLI" verify "$T/p640c.safetensors"
case "$rc $out" in "1 error: $T/p640c.safetensors: INCOMPLETE_BUFFER: "*) ;; *) echo "FAIL: pickle-looking cut file: $rc $out"; fail=1;; esac

# ---- hash: sha256sum's format, the FIPS 180 vectors, tensors by name whatever the layout ----
mkdir "$T/h"
u8() { printf '"%s":{"dtype":"U8","shape":[%s],"data_offsets":[%s,%s]}' "$1" "$2" "$3" "$(( $3 + $2 ))"; }
v448=abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq
v896=abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu
head -c 1000000 /dev/zero | tr '\000' a > "$T/h/million"
mk "$T/h/fips.safetensors" "{$(u8 abc 3 0),$(u8 empty 0 3),$(u8 v448 56 3),$(u8 v896 112 59),$(u8 million 1000000 171)}" "abc$v448$v896"
cat "$T/h/million" >> "$T/h/fips.safetensors"
fips="ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  abc
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty
cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0  million
248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1  v448
cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1  v896"
for simd in auto scalar; do             # the SHA extensions where the CPU has them, and not
    run env SAFELOAD_SIMD=$simd $RUNNER "$CLI" hash --tensors "$T/h/fips.safetensors"
    check "hash FIPS 180 vectors ($simd)" "0 $fips" "$rc $out"
done
if command -v sha256sum >/dev/null 2>&1; then
    run $RUNNER "$CLI" hash "$T/h/fips.safetensors"; check "hash = sha256sum" "0 $(sha256sum "$T/h/fips.safetensors")" "$rc $out"
    # a 9 MiB tensor crosses the 4 MiB reads; messages of every length mod 64 around it
    head -c 9437423 /dev/urandom > "$T/h/rnd"
    hdr="{$(u8 big 9437184 0),$(u8 t1 1 9437184),$(u8 t55 55 9437185),$(u8 t56 56 9437240),$(u8 t63 63 9437296),$(u8 t64 64 9437359)}"
    mk "$T/h/r.safetensors" "$hdr"; cat "$T/h/rnd" >> "$T/h/r.safetensors"
    want=""
    for t in "big 0 9437184" "t1 9437184 1" "t55 9437185 55" "t56 9437240 56" "t63 9437296 63" "t64 9437359 64"; do
        set -- $t
        h=$(tail -c +$(( $2 + 1 )) "$T/h/rnd" | head -c $3 | sha256sum | cut -d' ' -f1)
        want="$want$h  $1
"
    done
    for simd in auto scalar; do
        run env SAFELOAD_SIMD=$simd $RUNNER "$CLI" hash --tensors --threads 2 "$T/h/r.safetensors"
        check "hash --tensors = sha256sum of the bytes ($simd)" "0 $want" "$rc $out
"
        run env SAFELOAD_SIMD=$simd $RUNNER "$CLI" hash "$T/h/r.safetensors"
        check "hash big file = sha256sum ($simd)" "0 $(sha256sum "$T/h/r.safetensors")" "$rc $out"
    done
    # a sharded copy (other files, other order): every file and the index, sorted by path;
    # the tensor listing is the single file's
    mkdir "$T/h/sh"
    mk "$T/h/sh/model-00001-of-00002.safetensors" "{$(u8 t64 64 0),$(u8 big 9437184 64)}"
    tail -c +9437360 "$T/h/rnd" >> "$T/h/sh/model-00001-of-00002.safetensors"; head -c 9437184 "$T/h/rnd" >> "$T/h/sh/model-00001-of-00002.safetensors"
    mk "$T/h/sh/model-00002-of-00002.safetensors" "{$(u8 t63 63 0),$(u8 t56 56 63),$(u8 t55 55 119),$(u8 t1 1 174)}"
    tail -c +9437297 "$T/h/rnd" | head -c 63 >> "$T/h/sh/model-00002-of-00002.safetensors"
    tail -c +9437241 "$T/h/rnd" | head -c 56 >> "$T/h/sh/model-00002-of-00002.safetensors"
    tail -c +9437186 "$T/h/rnd" | head -c 55 >> "$T/h/sh/model-00002-of-00002.safetensors"
    tail -c +9437185 "$T/h/rnd" | head -c 1 >> "$T/h/sh/model-00002-of-00002.safetensors"
    printf '{"metadata":{"total_size":9437423},"weight_map":{"big":"model-00001-of-00002.safetensors","t64":"model-00001-of-00002.safetensors","t1":"model-00002-of-00002.safetensors","t55":"model-00002-of-00002.safetensors","t56":"model-00002-of-00002.safetensors","t63":"model-00002-of-00002.safetensors"}}' > "$T/h/sh/model.safetensors.index.json"
    run $RUNNER "$CLI" hash "$T/h/sh"
    check "hash sharded = sha256sum" "0 $(cd "$T/h/sh" && sha256sum model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json | sed "s|  |  $T/h/sh/|")" "$rc $out"
    run $RUNNER "$CLI" hash --tensors "$T/h/sh"; check "hash --tensors sharded = single" "0 $want" "$rc $out
"
    run $RUNNER "$CLI" hash --json "$T/h/sh/model.safetensors.index.json"
    python3 - "$T/h/sh" "$out" <<'PY' || { echo "FAIL: hash --json"; fail=1; }
import json, sys, hashlib, os
d, doc = sys.argv[1], json.loads(sys.argv[2])
assert doc["schema"] == 1 and doc["command"] == "hash", doc
names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"]
assert [f["file"] for f in doc["files"]] == [os.path.join(d, n) for n in names], doc
for f in doc["files"]:
    assert f["sha256"] == hashlib.sha256(open(f["file"], "rb").read()).hexdigest(), f
PY
    run $RUNNER "$CLI" hash --tensors --json "$T/h/r.safetensors"
    python3 - "$out" "$want" <<'PY' || { echo "FAIL: hash --tensors --json"; fail=1; }
import json, sys
doc, want = json.loads(sys.argv[1]), sys.argv[2].split("\n")[:-1]
assert doc["schema"] == 1 and doc["command"] == "hash" and "files" not in doc, doc
assert [t["sha256"] + "  " + t["name"] for t in doc["tensors"]] == want, doc
PY
fi
# names sort bytewise; an escaped name marks its line with '\', as sha256sum does
mk "$T/h/n.safetensors" "{$(u8 b 1 0),$(u8 'a\\b' 1 1),$(u8 B 1 2),$(u8 'a\nb' 0 3)}" xyz
run $RUNNER "$CLI" hash --tensors "$T/h/n.safetensors"
check "hash --tensors names" "0 $(printf '%s' z | sha256sum | cut -d' ' -f1)  B
\\$(printf '' | sha256sum | cut -d' ' -f1)  a\\x0ab
\\$(printf '%s' y | sha256sum | cut -d' ' -f1)  a\\\\b
$(printf '%s' x | sha256sum | cut -d' ' -f1)  b" "$rc $out"
run $RUNNER "$CLI" hash; check "hash usage" "2 error: hash needs a PATH" "$rc $(head -n 1 "$T/err")"
run $RUNNER "$CLI" hash "$T/kinds/lfs.safetensors"; check "hash of an LFS pointer" 1 "$rc"

# ---- --json: "schema": 1, one shape for a file and a sharded model, errors on stdout ----
jcheck() { # name json python-assertions (d is the document)
    if ! printf '%s' "$2" | python3 -c "import json, sys
d = json.load(sys.stdin)
$3" 2>"$T/jerr"; then echo "FAIL: $1: $(tail -n 1 "$T/jerr")"; echo "  $2" | head -c 600; echo; fail=1; fi
}
run $RUNNER "$CLI" inspect --json "$T/s.safetensors"
jcheck "inspect --json file" "$out" '
assert d["schema"] == 1 and d["command"] == "inspect" and d["sharded"] is False, d
assert d["path"] == "'"$T/s.safetensors"'" and d["metadata"] == {"format": "pt", "source": "safeload sample"}
s = d["shards"]
assert len(s) == 1 and s[0]["file"] == d["path"] and s[0]["header_bytes"] == 560 and s[0]["data_bytes"] == 6792
t = {x["name"]: x for x in s[0]["tensors"]}
assert t["model.embed_tokens.weight"] == {"name": "model.embed_tokens.weight", "dtype": "BF16", "shape": [64, 32], "data_offsets": [136, 4232], "offset": 704, "elements": 2048, "unlisted": False}, t
assert t["lm_head.scale"]["shape"] == [] and t["lm_head.scale"]["elements"] == 1
assert d["summary"] == {"tensors": 6, "parameters": 3617, "bytes": 6792, "by_dtype": {"F8_E4M3": {"tensors": 1, "parameters": 512, "bytes": 512}, "F16": {"tensors": 2, "parameters": 1024, "bytes": 2048}, "BF16": {"tensors": 1, "parameters": 2048, "bytes": 4096}, "F32": {"tensors": 1, "parameters": 32, "bytes": 128}, "F64": {"tensors": 1, "parameters": 1, "bytes": 8}}}, d["summary"]
assert d["warnings"] == []'
run $RUNNER "$CLI" inspect "$T/s.safetensors"
check "inspect summary line" "summary: 6 tensors, 3617 parameters (F8_E4M3 512, F16 1024, BF16 2048, F32 32, F64 1), 6792 bytes" "$(printf '%s\n' "$out" | tail -n 1)"
run $RUNNER "$CLI" inspect --json "$T/one"
jcheck "inspect --json sharded, same shape" "$out" '
assert d["schema"] == 1 and d["sharded"] is True and d["metadata"] == {}, d
assert [s["file"] for s in d["shards"]] == ["'"$T/one/m.safetensors"'"]
assert sorted(d) == ["command", "metadata", "path", "schema", "sharded", "shards", "summary", "warnings"], sorted(d)
assert d["summary"]["tensors"] == 1 and d["summary"]["bytes"] == 8
w = d["warnings"][0]
assert sorted(w) == ["file", "id", "message", "offset", "tensor"] and w["id"] == "INDEX_UNLISTED_TENSOR" and w["tensor"] == "model.norm.weight" and w["offset"] == 131, w
assert [t["unlisted"] for t in d["shards"][0]["tensors"]] == [False, True, True, True, True, True]'
# numbers as JSON numbers, uint64 in full; names with control bytes and non-ASCII escaped right
mk "$T/j64.safetensors" '{"__metadata__":{"k\u0001":"v\"\\"},"t\u001f\u00e9\u2028":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}}'
run $RUNNER "$CLI" inspect --json "$T/j64.safetensors"
jcheck "inspect --json exact numbers and escapes" "$out" '
t = d["shards"][0]["tensors"][0]
assert t["name"] == "t\x1f\u00e9\u2028" and t["shape"] == [0, 18446744073709551615] and t["elements"] == 0, t
assert d["metadata"] == {"k\x01": "v\"\\"}, d["metadata"]'
# errors: {"schema":1,"error":{...}} on stdout, the same exit code
run $RUNNER "$CLI" inspect --json "$T/kinds/lfs.safetensors"
jcheck "inspect --json error" "$out" '
e = d["error"]
assert d["schema"] == 1 and sorted(d) == ["error", "schema"], d
assert e["id"] == "NOT_SAFETENSORS" and e["file"] == "'"$T/kinds/lfs.safetensors"'" and e["tensor"] is None and e["offset"] == 0, e
assert e["message"].startswith("a Git LFS pointer"), e'
check "inspect --json error exit" 1 "$rc"
run $RUNNER "$CLI" load --json "$T/missing.safetensors"
jcheck "load --json I/O error" "$out" '
assert d["error"]["id"] == "IO_ERROR" and d["error"]["offset"] is None and "no such file" in d["error"]["message"], d'
check "load --json I/O error exit" 2 "$rc"
run $RUNNER "$CLI" load --json --checksum "$T/s.safetensors"
jcheck "load --json" "$out" '
assert d["schema"] == 1 and d["command"] == "load" and d["tensors"] == 6 and d["bytes_read"] == 6792, d
assert d["checksum"] == "'"$($RUNNER "$CLI" load --checksum "$T/s.safetensors" | sed -n 's/^checksum: //p')"'", d
assert isinstance(d["seconds"], float) and d["io"] == "read" and d["files"] == 1 and d["warnings"] == [], d'
# direct: the queue that ran, and of its reads those into registered (fixed) buffers
run $RUNNER "$CLI" load --json --io direct --queue-depth 8 --threads 2 "$T/s.safetensors"
jcheck "load --json direct" "$out" '
assert d["io"] == "direct" and d["aio"] in ("io_uring", "none") and d["reads"] >= 1, d
assert d["fixed_reads"] <= d["reads"] and (d["aio"] == "io_uring" or d["fixed_reads"] == 0), d
assert (d["aio"] == "none") == (d["queue_depth"] == 0), d'

# ---- verify --strict, metadata.total_size, --data, and what a cut file still holds ----
mkdir "$T/vs"; cp "$T/s.safetensors" "$T/vs/m.safetensors"
printf '{"metadata":{"total_size":8},"weight_map":{"lm_head.scale":"m.safetensors"}}' > "$T/vs/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/vs"; check "verify: unlisted tensors warn" "0 ok: $T/vs: 1 tensor, 8 bytes" "$rc $out"
run $RUNNER "$CLI" verify --strict "$T/vs"
case "$rc $out" in "1 error: $T/vs: INDEX_UNLISTED_TENSOR: "*) ;; *) echo "FAIL: verify --strict unlisted: $rc $out"; fail=1;; esac
printf '{"metadata":{"total_size":9437423},"weight_map":{"lm_head.scale":"m.safetensors","model.norm.weight":"m.safetensors","model.embed_tokens.weight":"m.safetensors","empty.bias":"m.safetensors","model.layers.0.self_attn.q_proj.weight":"m.safetensors","model.layers.0.mlp.experts.3.up_proj.weight":"m.safetensors"}}' > "$T/vs/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/vs"
check "verify: total_size wrong warns" "0 ok: $T/vs: 6 tensors, 6792 bytes|warning: $T/vs/model.safetensors.index.json: INVALID_INDEX: metadata.total_size is 9437423 but the tensors hold 6792 bytes" "$rc $out|$(err)"
run $RUNNER "$CLI" verify --strict "$T/vs"
check "verify --strict: total_size wrong fails" "1 error: $T/vs: INVALID_INDEX: metadata.total_size is 9437423 but the tensors hold 6792 bytes [file $T/vs/model.safetensors.index.json]" "$rc $out"
sed 's/9437423/6792/' "$T/vs/model.safetensors.index.json" > "$T/vs/i" && mv "$T/vs/i" "$T/vs/model.safetensors.index.json"
run $RUNNER "$CLI" verify --strict --data "$T/vs"; check "verify --strict --data ok" "0 ok: $T/vs: 6 tensors, 6792 bytes, every byte read|" "$rc $out|$(err)"
run $RUNNER "$CLI" verify --strict --json "$T/vs"
jcheck "verify --json" "$out" '
assert d == {"schema": 1, "command": "verify", "path": "'"$T/vs"'", "ok": True, "tensors": 6, "bytes": 6792, "files": 1, "strict": True, "data_read": False, "total_size": 6792, "warnings": []}, d'
sed 's/6792/"many"/' "$T/vs/model.safetensors.index.json" > "$T/vs/i" && mv "$T/vs/i" "$T/vs/model.safetensors.index.json"
run $RUNNER "$CLI" verify --strict --json "$T/vs"
jcheck "verify --strict --json: total_size not a number" "$out" '
assert d["error"]["id"] == "INVALID_INDEX" and d["error"]["message"] == "metadata.total_size is not a whole number of bytes" and d["error"]["file"] == "'"$T/vs/model.safetensors.index.json"'", d'
check "verify --strict --json exit" 1 "$rc"
# a file cut inside its data: every tensor still whole, then the first that is not
head -c 5000 "$T/s.safetensors" > "$T/vs/cut.safetensors"
run $RUNNER "$CLI" verify "$T/vs/cut.safetensors"
check "verify names the damage" "1 error: $T/vs/cut.safetensors: INCOMPLETE_BUFFER: the file is 2360 bytes short: the tensors end at byte 7360 (byte 5000)
intact: lm_head.scale
intact: model.norm.weight
intact: model.embed_tokens.weight
intact: empty.bias
damaged: model.layers.0.self_attn.q_proj.weight: bytes 4800 to 6848, the file ends at byte 5000" "$rc $out"
run $RUNNER "$CLI" verify --json "$T/vs/cut.safetensors"
jcheck "verify --json names the damage" "$out" '
assert d["error"]["id"] == "INCOMPLETE_BUFFER" and d["error"]["offset"] == 5000, d
assert d["intact"] == ["lm_head.scale", "model.norm.weight", "model.embed_tokens.weight", "empty.bias"], d
assert d["damaged"] == {"name": "model.layers.0.self_attn.q_proj.weight", "offset": 4800, "end": 6848, "file_size": 5000}, d'
mkdir "$T/vs/sh"; cp "$T/vs/cut.safetensors" "$T/vs/sh/b.safetensors"; cp "$T/h/fips.safetensors" "$T/vs/sh/a.safetensors"
printf '{"weight_map":{"abc":"a.safetensors","lm_head.scale":"b.safetensors"}}' > "$T/vs/sh/model.safetensors.index.json"
run $RUNNER "$CLI" verify "$T/vs/sh"
case "$rc $out" in "1 error: $T/vs/sh: INCOMPLETE_BUFFER: "*"[file $T/vs/sh/b.safetensors] (byte 5000)
intact: lm_head.scale
"*"damaged: model.layers.0.self_attn.q_proj.weight: bytes 4800 to 6848, the file ends at byte 5000") ;;
    *) echo "FAIL: verify names the damage in a shard: $rc $out"; fail=1;; esac
if [ -z "$RUNNER" ] && [ -n "${FAIL_IO:-}" ]; then      # a disk error: only --data reads the data
    run env SL_FAIL_READ_AT=5000 LD_PRELOAD="$FAIL_IO" "$CLI" verify "$T/s.safetensors"; check "verify without --data" 0 "$rc"
    run env SL_FAIL_READ_AT=5000 LD_PRELOAD="$FAIL_IO" "$CLI" verify --data "$T/s.safetensors"
    check "verify --data: a disk error" "2 error: $T/s.safetensors: IO_ERROR: read at byte 4664 failed: I/O error (error 5) [tensor model.embed_tokens.weight]
intact: lm_head.scale
intact: model.norm.weight
damaged: model.embed_tokens.weight: a read failed at byte 4664" "$rc $out"
fi

# ---- keys without --expect lists the names; show --count all on a big tensor asks for --force
run $RUNNER "$CLI" keys "$T/s.safetensors"
check "keys lists the names" "0 lm_head.scale
model.norm.weight
model.embed_tokens.weight
empty.bias
model.layers.0.self_attn.q_proj.weight
model.layers.0.mlp.experts.3.up_proj.weight" "$rc $out"
run $RUNNER "$CLI" keys --json "$T/vs"
jcheck "keys --json" "$out" '
assert d["schema"] == 1 and d["command"] == "keys" and d["tensors"] == 6 and d["names"][0] == "lm_head.scale" and len(d["names"]) == 6 and d["warnings"] == [], d'
printf 'lm_head.scale\nnope\n' > "$T/vs/names"
run $RUNNER "$CLI" keys --json --expect "$T/vs/names" "$T/s.safetensors"
jcheck "keys --json --expect" "$out" '
assert d["same"] is False and d["expected"] == 2 and d["missing"] == ["nope"] and len(d["unexpected"]) == 5 and d["unexpected"][0] == "model.norm.weight", d'
check "keys --json --expect exit" 1 "$rc"
mk "$T/vs/big.safetensors" "{$(u8 w 1000001 0)}"; head -c 1000001 /dev/zero >> "$T/vs/big.safetensors"
run $RUNNER "$CLI" show "$T/vs/big.safetensors" w --count all
check "show --count all asks for --force" "2 error: w has 1000001 elements: --count all would print every one; add --force, or give --count N" "$rc $(err)"
run $RUNNER "$CLI" show "$T/vs/big.safetensors" w --count all --force; check "show --count all --force" "0 125002" "$rc $(printf '%s\n' "$out" | wc -l | tr -d ' ')"
run $RUNNER "$CLI" show "$T/vs/big.safetensors" w --count 1000001; check "show --count N needs no --force" 0 "$rc"
mk "$T/vs/mm.safetensors" "{$(u8 w 1000000 0)}"; head -c 1000000 /dev/zero >> "$T/vs/mm.safetensors"
run $RUNNER "$CLI" show "$T/vs/mm.safetensors" w --count all; check "show --count all at 1,000,000" 0 "$rc"
run $RUNNER "$CLI" show --json "$T/s.safetensors" model.norm.weight --count 3
jcheck "show --json" "$out" '
assert d == {"schema": 1, "command": "show", "path": "'"$T/s.safetensors"'", "name": "model.norm.weight", "dtype": "F32", "shape": [32], "elements": 32, "slice": None, "packed": False, "shown": 3, "values": [1, 1.015625, 1.03125], "warnings": []}, d'
run $RUNNER "$CLI" show --json "$T/s.safetensors" nope
jcheck "show --json no such tensor" "$out" '
assert d["error"]["id"] == "NOT_FOUND" and d["error"]["message"] == "no tensor named nope", d'
check "show --json no such tensor exit" 1 "$rc"

# ---- --confine: a shard linked outside the index's folder is refused; links are followed
# by default (the Hugging Face cache links snapshot files into ../../blobs)
if [ -d "$T/h/sh" ]; then        # the sharded copy made above (where sha256sum is)
mkdir -p "$T/hf/blobs" "$T/hf/snapshots/abc"
cp "$T/h/sh/model-00001-of-00002.safetensors" "$T/hf/blobs/1"; cp "$T/h/sh/model-00002-of-00002.safetensors" "$T/hf/blobs/2"
cp "$T/h/sh/model.safetensors.index.json" "$T/hf/snapshots/abc/"
ln -s ../../blobs/1 "$T/hf/snapshots/abc/model-00001-of-00002.safetensors"
ln -s ../../blobs/2 "$T/hf/snapshots/abc/model-00002-of-00002.safetensors"
run $RUNNER "$CLI" verify "$T/hf/snapshots/abc"; check "links followed by default" "0 ok: $T/hf/snapshots/abc: 6 tensors, 9437423 bytes" "$rc $out"
run $RUNNER "$CLI" verify --confine "$T/hf/snapshots/abc"
check "verify --confine" "1 error: $T/hf/snapshots/abc: INVALID_INDEX: shard resolves outside the index's directory (a symbolic link; SAFELOAD_MODEL_CONFINE, checked by openat2 RESOLVE_BENEATH) [file $T/hf/snapshots/abc/model-00001-of-00002.safetensors]" "$rc $(printf '%s' "$out" | sed 's/checked by realpath/checked by openat2 RESOLVE_BENEATH/')"
run $RUNNER "$CLI" hash --confine --json "$T/hf/snapshots/abc"
jcheck "hash --confine --json" "$out" '
assert d["error"]["id"] == "INVALID_INDEX" and d["error"]["file"] == "'"$T/hf/snapshots/abc/model-00001-of-00002.safetensors"'", d'
run $RUNNER "$CLI" load --confine "$T/h/sh"; check "load --confine, no links" 0 "$rc"
run $RUNNER "$CLI" inspect -- --confine; check "--confine after -- is a PATH" 2 "$rc"
fi

if [ -z "$RUNNER" ] && [ -n "${FAIL_IO:-}" ]; then
    # a load error names the tensor in full (past 255 bytes, control bytes escaped), as
    # warnings do, for each I/O mode
    long=$(printf 'L%.0s' $(seq 1 300))
    mk "$T/rd.safetensors" "{\"$long\\u0007x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},\"a\\u0007b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]}}" abcdefgh
    n=$(( $(wc -c < "$T/rd.safetensors") - 8 ))
    for io in read direct; do
        run env SL_FAIL_READ_AT=$n LD_PRELOAD="$FAIL_IO" "$CLI" load "$T/rd.safetensors" --io $io --threads 1
        case "$rc $(err)" in "2 error: $T/rd.safetensors: IO_ERROR: "*"read at byte $n failed: I/O error (error 5) [tensor $long\\x07x]") ;;
            *) echo "FAIL: load error, full tensor name ($io): $rc $(err)"; fail=1;; esac
    done
    # a load that fails after the open still prints the open's warnings, then the error
    mkdir "$T/wf"; cp "$T/rd.safetensors" "$T/wf/m.safetensors"
    printf '{"weight_map":{"a\\u0007b":"m.safetensors"}}' > "$T/wf/model.safetensors.index.json"
    run env SL_FAIL_READ_AT=$n LD_PRELOAD="$FAIL_IO" "$CLI" load "$T/wf"
    case "$rc $(err)" in "2 warning: $T/wf/m.safetensors: INDEX_UNLISTED_TENSOR: "*"[tensor $long\x07x] (byte 9)
error: $T/wf/m.safetensors: IO_ERROR: "*"[tensor a\x07b]") ;; *) echo "FAIL: warnings before a load error: $rc $(err)"; fail=1;; esac
    # an I/O error on a shard under a long directory whose name ends in .safetensors names the
    # shard ([file ...]), not the directory given
    mkdir "$L/io.safetensors"; cp "$L/bad/model.safetensors.index.json" "$L/io.safetensors/"
    cp "$T/sm.safetensors" "$L/io.safetensors/b.safetensors"
    run env SL_FAIL_OPEN=b.safetensors LD_PRELOAD="$FAIL_IO" "$CLI" verify "$L/io.safetensors"
    case "$rc $out" in "2 error: $L/io.safetensors: IO_ERROR: cannot open: permission denied (error 13) [file $T/"*"...]") ;;
        *) echo "FAIL: I/O error on a shard under a long .safetensors dir: $rc $out"; fail=1;; esac
    # ... while the .safetensors file given is named in full, without [file]
    cp "$T/s.safetensors" "$L/f.safetensors"
    run env SL_FAIL_OPEN=f.safetensors LD_PRELOAD="$FAIL_IO" "$CLI" verify "$L/f.safetensors"
    check "I/O error on a long .safetensors file" "2 error: $L/f.safetensors: IO_ERROR: cannot open: permission denied (error 13)" "$rc $out"
    # a thread limit: the load runs with the threads it got, down to the caller's alone, and
    # loads the same bytes
    python3 -c 'import sys, struct; n = 16 << 20; h = b"{\"w\":{\"dtype\":\"U8\",\"shape\":[%d],\"data_offsets\":[0,%d]}}" % (n, n); open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(range(256)) * (n // 256))' "$T/big.safetensors"
    run "$CLI" load "$T/big.safetensors" --threads 4 --checksum
    sum=$(printf '%s\n' "$out" | tail -n 1)
    case "$rc $out" in "0 loaded: "*"4 threads, io "*) ;; *) echo "FAIL: load with 4 threads: $rc $out"; fail=1;; esac
    for k in 0 1; do
        run env SL_FAIL_THREADS=$k LD_PRELOAD="$FAIL_IO" "$CLI" load "$T/big.safetensors" --threads 4 --checksum
        case "$rc $out" in "0 loaded: "*" $((k + 1)) thread"*"$sum") ;; *) echo "FAIL: load under a limit of $k threads: $rc $out"; fail=1;; esac
    done
    run env SL_FAIL_THREADS=0 LD_PRELOAD="$FAIL_IO" "$CLI" verify "$T/one"; check "sharded open under a thread limit" 0 "$rc"
    # a shard behind a directory that denies access (stat fails too) may well be there: an
    # IO_ERROR naming it, not the index's INDEX_SHARD_MISSING
    mkdir "$T/deny"; cp "$T/s.safetensors" "$T/deny/b.safetensors"
    printf '{"weight_map":{"lm_head.scale":"b.safetensors"}}' > "$T/deny/model.safetensors.index.json"
    run env SL_FAIL_STAT=1 SL_FAIL_OPEN=b.safetensors LD_PRELOAD="$FAIL_IO" "$CLI" verify "$T/deny"
    check "shard behind a denying directory" "2 error: $T/deny: IO_ERROR: cannot open: permission denied (error 13) [file $T/deny/b.safetensors]" "$rc $out"
else
    echo "test_cli.sh: fail_io.so not built or a RUNNER set: I/O failure cases skipped"
fi

[ $fail = 0 ] && echo "test_cli.sh: all passed"
exit $fail
