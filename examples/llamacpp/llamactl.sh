#!/bin/sh
# llamactl.sh — one llama.cpp llama-server per host working directory, for the llamacpp campaign.
#
# Run it in the host's working directory (signoff runs every command there). The server listens on
# 127.0.0.1 only, on a free port chosen at `init` (./server.port); its flags are ./server.args, one flag
# (and its value) per line, so an option is a line added, changed or removed there and a restart. It only
# ever signals the PID in ./llama.pid, and only when that process is a llama-server running in this
# directory. The programs and the model come from build.sh's cache (or the directory given to init).
#
#   init DIR|default      stop our old server, write the baseline server.args, start. DIR holds
#                         bin/llama-server and model/tiny-llama.gguf; `default` is build.sh's cache
#   start | stop | restart
#   health                /health answers and a 1-token completion comes back (exit 0), else exit 1
#   alive                 read-only: exit 0 while our llama-server process exists (answering or not)
#   set FLAG [VALUE]      put FLAG (with VALUE) in server.args in place of any FLAG line, and restart
#   unset FLAG            remove FLAG from server.args, and restart
#   is FLAG [VALUE]       read-only: exit 0 when the running server (when it is down: server.args) has
#                         FLAG, followed by VALUE when one is given; 1 when not
#   bench ARGS...         the benchmark: loadgen.py bench against this server (vLLM --save-result JSON)
#   abort-cascade ARGS... stress: streams cancelled mid-way, then a health request
#   burst ARGS...         stress: more requests at once than the server has slots, then a health request
#   gpu                   read-only: exit 0 when `llama-server --list-devices` lists a GPU device
#   deprecated FLAG       read-only: exit 0 when llama-server's --help marks FLAG DEPRECATED (line shown)
#   docs FILE PHRASE      read-only: grep -n PHRASE in llama.cpp's own docs/FILE (exit 1 when absent)
#   sizing [N [TOKENS]]   is the model big enough that the server, not the client, is measured? The server's
#                         time per token through HTTP (at 8 concurrent requests) against the client's CPU per
#                         token, beside llama-batched-bench's offline decode rate at the server's slot count;
#                         exit 1 when the server's share is under 5x the client's
set -u
set -f # no globbing: a flag's value such as 'blk.*=CPU' reaches llama-server as written

DIR=$(pwd -P)
PIDFILE=$DIR/llama.pid
PY=${PYTHON:-python3}
VERSION=0.3.36 # build.sh's pinned llama-cpp-python (its vendored llama.cpp)
CACHE=${SIGNOFF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/signoff}/llama.cpp-$VERSION-$(uname -m)

die() { echo "llamactl: $*" >&2; exit 1; }

home() { # where bin/ and model/ are: the path init was given, kept in ./llama.home
    h=$(cat "$DIR/llama.home" 2>/dev/null) || h=$CACHE
    [ -x "$h/bin/llama-server" ] || die "no llama-server in $h/bin: run build.sh (or init DIR)"
    echo "$h"
}

alive() {
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ]
}

our_pid() {
    [ -f "$PIDFILE" ] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null)
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    alive "$pid" || return 1
    case "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" in *llama-server*) ;; *) return 1 ;; esac
    [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$DIR" ] || return 1
    echo "$pid"
}

loadgen() { "$PY" "$DIR/loadgen.py" "$@" --port-file "$DIR/server.port"; }

wait_up() {
    i=0
    while [ $i -lt 600 ]; do # 60 s: the model is read (mmap) and the slots are made before /health is 200
        pid=$(our_pid) || {
            tail -n 5 server.log >&2 2>/dev/null
            die "llama-server exited while starting (server.log above)"
        }
        loadgen health >/dev/null 2>&1 && return 0
        sleep 0.1
        i=$((i + 1))
    done
    tail -n 5 server.log >&2 2>/dev/null
    die "llama-server did not answer /health within 60 s (server.log above)"
}

write_args() { # the baseline
    cat >server.args <<EOF
--host 127.0.0.1
--port $(cat server.port)
--model $1/model/tiny-llama.gguf
--ctx-size 4096
--parallel 2
--threads 1
EOF
}

argv() { # server.args as words: each line is a flag, or a flag and its value
    sed -n 's/^[[:space:]]*\(-[^[:space:]]*\)\([[:space:]][[:space:]]*\([^[:space:]]*\)\)\{0,1\}[[:space:]]*$/\1 \3/p' server.args
}

start() {
    if pid=$(our_pid); then
        loadgen health >/dev/null 2>&1 && { echo "llama-server already running (pid $pid)"; return 0; }
    fi
    [ -f server.args ] || die "no server.args here: run 'init' first"
    h=$(home)
    rm -f "$PIDFILE"
    # Its own session (setsid): the command that started it may end, and its process group with it.
    # shellcheck disable=SC2046  # server.args holds one flag and at most one value per line, no blanks
    setsid sh -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" "$h/bin/llama-server" $(argv) \
        </dev/null >>server.log 2>&1 &
    i=0
    while [ ! -s "$PIDFILE" ] && [ $i -lt 50 ]; do sleep 0.02; i=$((i + 1)); done
    wait_up
    echo "llama-server up (pid $(cat "$PIDFILE"), port $(cat server.port)): $(argv | grep -v -e '^--model' -e '^--host' -e '^--port' | tr '\n' ' ')"
}

stop() {
    pid=$(our_pid) || { rm -f "$PIDFILE"; echo "no llama-server of ours running"; return 0; }
    kill -TERM "$pid" 2>/dev/null
    i=0
    while alive "$pid" && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    if [ "$(our_pid)" = "$pid" ]; then # still our llama-server, not a PID reused since
        echo "llama-server $pid ignored SIGTERM for 5 s; SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$PIDFILE"
    echo "llama-server $pid stopped"
}

one_word() { # server.args holds one flag and at most one value per line: a blank would split it
    case "$1" in '' | *[[:space:]]*) die "$2 must be one word without blanks: '$1'" ;; esac
}

set_flag() { # FLAG [VALUE]
    one_word "$1" FLAG
    case "$1" in -*) ;; *) die "FLAG starts with '-': '$1'" ;; esac
    grep -v -F -x -e "$1" server.args | grep -v -F -e "$1 " >server.args.new || true
    if [ $# -eq 2 ]; then
        one_word "$2" VALUE
        printf '%s %s\n' "$1" "$2" >>server.args.new
    else
        printf '%s\n' "$1" >>server.args.new
    fi
    mv server.args.new server.args
}

unset_flag() {
    one_word "$1" FLAG
    grep -v -F -x -e "$1" server.args | grep -v -F -e "$1 " >server.args.new || true
    mv server.args.new server.args
}

is() { # FLAG [VALUE]: in the running server's command line, else in server.args
    if pid=$(our_pid); then
        words=$(tr '\0' '\n' <"/proc/$pid/cmdline" | sed 1d)
        where="the running server"
    else
        words=$(argv | tr ' ' '\n' | sed '/^$/d')
        where="server.args (the server is down)"
    fi
    # the word after FLAG: its value, when it takes one
    found=$(printf "%s\n" "$words" | awk -v flag="$1" 'seen { print; exit } $0 == flag { seen = 1 }')
    if ! printf "%s\n" "$words" | grep -qxF -- "$1"; then
        echo "$1: not set in $where"
        return 1
    fi
    if [ $# -eq 1 ]; then
        echo "$1: set in $where"
        return 0
    fi
    echo "$1 = $found in $where"
    [ "$found" = "$2" ]
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
init)
    [ $# -eq 1 ] || die "usage: init DIR|default"
    h=$1
    [ "$h" = default ] && h=$CACHE
    one_word "$h" "the llama.cpp directory"

    [ -x "$h/bin/llama-server" ] || die "no llama-server in $h/bin (run examples/llamacpp/build.sh on this host)"
    [ -f "$h/model/tiny-llama.gguf" ] || die "no model in $h/model (run examples/llamacpp/build.sh on this host)"
    echo "$h" >llama.home
    stop >/dev/null
    rm -f server.log
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' >server.port ||
        die "could not find a free port"
    write_args "$h"
    start
    ;;
start) start ;;
stop) stop ;;
restart) stop >/dev/null && start ;;
health) loadgen health ;;
alive) pid=$(our_pid) && echo "llama-server $pid is running" || die "no llama-server of ours is running" ;;
set)
    [ $# -ge 1 ] && [ $# -le 2 ] || die "usage: set FLAG [VALUE]"
    set_flag "$@"
    stop >/dev/null && start && is "$@"
    ;;
unset)
    [ $# -eq 1 ] || die "usage: unset FLAG"
    unset_flag "$1"
    stop >/dev/null && start && ! is "$1" >/dev/null && echo "$1: not set"
    ;;
is) [ $# -ge 1 ] && [ $# -le 2 ] || die "usage: is FLAG [VALUE]"; is "$@" ;;
bench) loadgen bench "$@" ;;
abort-cascade) loadgen abort-cascade "$@" ;;
burst) loadgen burst "$@" ;;
gpu)
    out=$("$(home)/bin/llama-server" --list-devices 2>&1)
    echo "$out" | sed -n '/Available devices/,$p'
    echo "$out" | sed -n '/Available devices/,$p' | sed 1d | grep -qi -e cuda -e rocm -e vulkan -e metal -e sycl -e gpu ||
        die "llama-server --list-devices lists no GPU: -ngl offloads nothing on this host"
    ;;
deprecated)
    [ $# -eq 1 ] || die "usage: deprecated FLAG"
    line=$("$(home)/bin/llama-server" --help 2>/dev/null | grep -e "[ ,]$1[ ,]" -e "[ ,]$1\$" | head -n 1)
    [ -n "$line" ] || die "llama-server --help has no $1"
    echo "llama-server --help: $(echo "$line" | tr -s ' ')"
    echo "$line" | grep -q DEPRECATED
    ;;
docs)
    [ $# -eq 2 ] || die "usage: docs FILE PHRASE"
    case "$1" in */* | ..*) die "docs FILE is a file name in llama.cpp's docs/" ;; esac
    src=$(home)/src/llama_cpp_python-$VERSION/vendor/llama.cpp/docs
    [ -f "$src/$1" ] || die "no $src/$1"
    found=$(grep -n -F -- "$2" "$src/$1") || exit 1
    printf '%s\n' "$found" | sed "s|^|llama.cpp docs/$1:|"
    ;;
sizing)
    our_pid >/dev/null || die "no llama-server of ours running: init first"
    h=$(home)
    slots=$(is --parallel | sed -n 's/^--parallel = \([0-9]*\) .*/\1/p')
    threads=$(is --threads | sed -n 's/^--threads = \([0-9]*\) .*/\1/p')
    loadgen bench --concurrency 8 --num-prompts "${1:-32}" --output-len "${2:-32}" 2>/dev/null >sizing.json ||
        die "the HTTP benchmark failed"
    "$h/bin/llama-batched-bench" -m "$h/model/tiny-llama.gguf" -c 4096 -npp 24 -ntg 128 -npl "${slots:-2}" \
        -t "${threads:-1}" >sizing.batched.log 2>&1 || die "llama-batched-bench failed (sizing.batched.log)"
    offline=$(awk -F'|' -v b="${slots:-2}" '$4 + 0 == b && $2 + 0 == 24 { gsub(/ /, "", $9); print $9 }' sizing.batched.log)
    "$PY" - "${offline:-0}" "${slots:-2}" <<'PYEOF'
import json, sys
r = json.load(open("sizing.json"))
offline, slots = float(sys.argv[1]), sys.argv[2]
tokens = r["total_output_tokens"]
server_ms = r["duration"] / tokens * 1000
client_ms = r["client_cpu_s"] / tokens * 1000
ratio = server_ms / client_ms if client_ms else float("inf")
print(f"HTTP at concurrency 8, {slots} slots: {r['output_throughput']:.0f} output tok/s = {server_ms:.2f} ms per token")
print(f"llama-batched-bench, batch {slots}: {offline:.0f} tok/s decode offline ({r['output_throughput'] / offline:.0%} of it through HTTP)" if offline else "llama-batched-bench: no figure")
print(f"load client: {client_ms:.3f} ms of CPU per token; the server's time per token is {ratio:.0f}x the client's")
sys.exit(0 if ratio >= 5 else 1)
PYEOF
    ;;
*) die "usage: sh llamactl.sh init DIR|default|start|stop|restart|health|alive|set FLAG [V]|unset FLAG|is FLAG [V]|bench ...|abort-cascade ...|burst ...|gpu|deprecated FLAG|docs FILE PHRASE|sizing" ;;
esac
