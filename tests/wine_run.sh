#!/bin/sh
# Runs a Windows program under wine, retrying only wine's own start-up race: Debian starts
# wineserver with -p0, so it exits the moment its last client does, and a client that starts in
# that moment dies before the program runs ("wine client error:...: Connection reset by peer").
# Anything the program itself prints or returns passes through unchanged.
# usage: tests/wine_run.sh PROGRAM.exe ARGS...   (WINE names the wine binary; default wine)
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
tries=0
while :; do
    WINEDEBUG=-all ${WINE:-wine} "$@" 2>"$err"
    rc=$?
    if [ $tries -lt 4 ] && grep -q '^wine client error' "$err"; then
        tries=$((tries + 1))
        sleep 1
        continue
    fi
    cat "$err" >&2
    exit $rc
done
