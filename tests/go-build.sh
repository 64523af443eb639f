# Sourced by the scripts that build test tools from Go modules and cache
# them under ~/.cache/plait/: what they all do before and after building.
#
# The caller sets
#   SCRIPT      its name, for messages
#   WHAT        what it builds, for the message when go is missing
#   DEST        its cache directory (the build lock lives there)
#   BIN_DIR     where the binaries go
#   BINARIES    their names (an array)
#   PRINTED     what it prints on the last line of stdout (BIN_DIR or a binary)
#   PRINT_FLAG  the flag that only prints PRINTED and builds nothing
# then calls `go_build_prepare "$@"`, builds each binary into "$OUT", and
# calls `go_build_install`.

go_build_have_all() {
    local b
    for b in "${BINARIES[@]}"; do
        [ -x "$BIN_DIR/$b" ] || return 1
    done
}

# Prints PRINTED and exits when asked only for it or when everything is
# built already; otherwise takes the build lock and sets WORK (a scratch
# directory removed on exit), OUT (inside it) and the start time.
go_build_prepare() {
    if [ "${1:-}" = "$PRINT_FLAG" ] || go_build_have_all; then
        echo "$PRINTED"
        exit 0
    fi
    command -v go >/dev/null || { echo "$SCRIPT: go is required to build $WHAT" >&2; exit 1; }
    # Two builders (e.g. two test binaries) must not race on the same output.
    mkdir -p "$DEST"
    exec 9>"$DEST/.build.lock"
    flock 9
    if go_build_have_all; then
        echo "$PRINTED"
        exit 0
    fi
    WORK="$(mktemp -d)"
    # Sources copied out of the module cache are read-only until made writable.
    trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
    OUT="$WORK/out"
    mkdir -p "$OUT"
    GO_BUILD_START=$(date +%s)
}

# Moves each binary from OUT into BIN_DIR, each by a rename so a reader
# never sees half a binary, and prints PRINTED.
go_build_install() {
    local b
    mkdir -p "$BIN_DIR"
    for b in "${BINARIES[@]}"; do
        mv "$OUT/$b" "$BIN_DIR/$b.tmp"
        mv "$BIN_DIR/$b.tmp" "$BIN_DIR/$b"
    done
    echo "$SCRIPT: built in $(( $(date +%s) - GO_BUILD_START ))s" >&2
    echo "$PRINTED"
}
