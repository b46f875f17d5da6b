#!/bin/sh
# servectl.sh ENGINE COMMAND … — one vLLM or SGLang server per host working directory, for a signoff
# campaign (`signoff init --template vllm|sglang`). Run it in the host's working directory (signoff runs
# every command there): the server's flags, pid, log and benchmark results live in that directory, and it
# only ever stops the process it started there.
#
#   ENGINE                 vllm | sglang
#   start MODEL            start the server with the flags in ./flags (one "--flag value" per line) and wait
#                          until /health answers (the first start may download the model)
#   stop                   stop the server this directory started
#   health                 exit 0 when the server answers /health
#   bench MODEL CONC N     N random prompts at concurrency CONC; prints the result JSON on stdout
#   abort-storm MODEL CONC stress: CONC streaming requests cut off after 20 s; the server must answer after
#   set FLAG [VALUE]       put "FLAG VALUE" in ./flags (FLAG alone for a flag without a value, such as
#                          --enable-chunked-prefill) and restart the server
#   unset FLAG             take FLAG (and its value) out of ./flags and restart the server
#   is FLAG [VALUE]        read-only: exit 0 when the running server was started with FLAG VALUE (two
#                          arguments, or FLAG=VALUE); without VALUE, when it was started with FLAG at all
#                          (e.g. --no-enable-prefix-caching). Flags and values are compared as text.
#
# SERVE_PORT (default 8000) and PYTHON (default python3) may be set in the campaign's commands.
set -u
set -f # no globbing: a flag value such as a JSON list or a pattern reaches the server as written

ENGINE=${1:?engine: vllm or sglang}
CMD=${2:?command}
shift 2
DIR=$(pwd -P)
PORT=${SERVE_PORT:-8000}
PY=${PYTHON:-python3}
touch "$DIR/flags"

die() { echo "servectl: $*" >&2; exit 1; }

without() { # ./flags without the line of flag $1 (its first word compared as text, not as a pattern)
    F=$1 awk '$1 != ENVIRON["F"]' "$DIR/flags" > "$DIR/flags.new"
}

ours() { # the pid in ./server.pid, when that process runs in this directory
    [ -f "$DIR/server.pid" ] || return 1
    pid=$(cat "$DIR/server.pid")
    [ -d "/proc/$pid" ] && [ "$(readlink "/proc/$pid/cwd")" = "$DIR" ] && echo "$pid"
}

health() { curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$PORT/health"; }

start() {
    model=$1
    echo "$model" > "$DIR/model"
    [ -n "$(ours)" ] && die "a server started here is already running (pid $(ours))"
    # shellcheck disable=SC2046  # one flag and its value per line, split into words on purpose
    case $ENGINE in
        vllm) nohup vllm serve "$model" --port "$PORT" $(cat "$DIR/flags") > "$DIR/server.log" 2>&1 & ;;
        sglang) nohup "$PY" -m sglang.launch_server --model-path "$model" --port "$PORT" $(cat "$DIR/flags") \
            > "$DIR/server.log" 2>&1 & ;;
        *) die "unknown engine $ENGINE" ;;
    esac
    echo $! > "$DIR/server.pid"
    i=0
    while ! health; do
        [ -n "$(ours)" ] || { tail -n 20 "$DIR/server.log" >&2; die "the server exited while starting"; }
        i=$((i + 1)); [ $i -lt 4500 ] || die "no /health answer after 900 s"
        sleep 0.2
    done
}

stop() {
    pid=$(ours) || return 0
    kill "$pid"
    i=0
    while [ -d "/proc/$pid" ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
    [ "$(ours)" = "$pid" ] && kill -9 "$pid" # still our server after 60 s, not a PID reused since
    rm -f "$DIR/server.pid"
}

bench() { # MODEL CONC N
    case $ENGINE in
        vllm)
            rm -f "$DIR/bench.json"
            vllm bench serve --model "$1" --port "$PORT" --dataset-name random --random-input-len 512 \
                --random-output-len 256 --num-prompts "$3" --max-concurrency "$2" --save-result \
                --result-filename "$DIR/bench.json" > "$DIR/bench.log" 2>&1 \
                || { tail -n 20 "$DIR/bench.log" >&2; exit 1; }
            cat "$DIR/bench.json" ;;
        sglang)
            rm -f "$DIR/bench.jsonl"
            "$PY" -m sglang.bench_serving --backend sglang --port "$PORT" --dataset-name random \
                --random-input-len 512 --random-output-len 256 --num-prompts "$3" --max-concurrency "$2" \
                --output-file "$DIR/bench.jsonl" > "$DIR/bench.log" 2>&1 \
                || { tail -n 20 "$DIR/bench.log" >&2; exit 1; }
            tail -n 1 "$DIR/bench.jsonl" ;;
    esac
}

restart() { stop; start "$(cat "$DIR/model")"; }

case $CMD in
    start) start "${1:?model}" ;;
    stop) stop ;;
    health) health ;;
    bench) bench "${1:?model}" "${2:?concurrency}" "${3:?number of prompts}" ;;
    abort-storm)
        timeout 20 sh "$0" "$ENGINE" bench "${1:?model}" "${2:?concurrency}" $((${2} * 8)) > /dev/null 2>&1
        i=0
        while ! health; do i=$((i + 1)); [ $i -lt 150 ] || die "no /health answer 30 s after the abort storm"; sleep 0.2; done ;;
    set)
        without "${1:?flag}"
        if [ $# -ge 2 ]; then echo "$1 $2" >> "$DIR/flags.new"; else echo "$1" >> "$DIR/flags.new"; fi
        mv "$DIR/flags.new" "$DIR/flags"; restart ;;
    unset)
        without "${1:?flag}"; mv "$DIR/flags.new" "$DIR/flags"; restart ;;
    is)
        flag=${1:?flag}
        pid=$(ours) || exit 1
        # The server's arguments one per line, each compared whole: FLAG VALUE as two arguments or FLAG=VALUE,
        # and with no VALUE, FLAG (or FLAG=anything) anywhere.
        tr '\0' '\n' < "/proc/$pid/cmdline" | F=$flag V=${2-} N=$# awk '
            BEGIN { f = ENVIRON["F"]; v = ENVIRON["V"]; n = ENVIRON["N"] + 0 }
            n < 2 && ($0 == f || index($0, f "=") == 1) { found = 1 }
            n >= 2 && ($0 == f "=" v || (prev == f && $0 == v)) { found = 1 }
            { prev = $0 }
            END { exit !found }' ;;
    *) die "unknown command $CMD" ;;
esac
