#!/bin/sh
# pgctl.sh — one PostgreSQL server per host working directory, for the postgres campaign.
#
# Run it in the host's working directory (signoff runs every command there). The cluster is ./pgdata;
# the server listens on a UNIX socket in ./run only (listen_addresses = ''), where its log is too, so
# nothing else on the machine is touched and two runs never collide. It only ever signals the PID in
# ./pgdata/postmaster.pid, and only when that process is a postgres running on this data directory.
# PostgreSQL refuses to run as root: as root, the server programs run as the `postgres` user.
#
#   init [SCALE]          stop our old server, initdb, start, create the bench database, pgbench -i -s SCALE
#   start | stop | restart
#   health                the server accepts a query (exit 0), else exit 1
#   set NAME VALUE        ALTER SYSTEM SET, then a reload — or a restart when pg_settings says the
#                         setting needs one — and wait until SHOW gives the new value
#   reset NAME            ALTER SYSTEM RESET, then reload or restart in the same way
#   is NAME VALUE         read-only: exit 0 when SHOW NAME gives VALUE, 1 when not (when the server is
#                         down: when postgresql.auto.conf sets NAME to VALUE for the next start)
#   hugepages             read-only: exit 0 when the machine has huge pages reserved (HugePages_Total > 0)
#   crash SECONDS         stress: pgbench load, kill -9 of the postmaster, crash recovery on restart
#   amcheck               read-only: pg_amcheck of every table and index in the bench database
set -u

DIR=$(pwd -P)
DATA=$DIR/pgdata
RUN=$DIR/run # socket directory and log
PORT=5432    # only names the socket file: .s.PGSQL.5432 in ./run
SUPER=signoff
DB=bench
SCALE=$(cat "$DIR/pgbench.scale" 2>/dev/null || echo 2)

die() { echo "pgctl: $*" >&2; exit 1; }

BIN=${PGBIN:-$(pg_config --bindir 2>/dev/null)}
[ -x "$BIN/initdb" ] || BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$BIN/initdb" ] || die "PostgreSQL server programs not found (apt install postgresql, or set PGBIN)"

AS=""
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root and there is no postgres user to run the server as"
    AS="runuser -u postgres --"
fi

# What the server programs need when they run as another user: every directory on the way to this one
# must be searchable (x) by that user. Say which one is not, in one line.
reachable() {
    [ -z "$AS" ] && return 0
    $AS test -x "$DIR" && return 0
    p=""
    for part in $(echo "${DIR#/}" | tr '/' ' '); do
        p="$p/$part"
        $AS test -x "$p" || die "the postgres user cannot reach $DIR: $p is not searchable by it (chmod o+x it, or run elsewhere)"
    done
    die "the postgres user cannot reach $DIR"
}

alive() { # and not a zombie (an exited daemon stays in /proc until whoever adopted it reaps it)
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ]
}

# The postmaster PID from our postmaster.pid, if that process is alive and serves this data directory.
our_pid() {
    [ -f "$DATA/postmaster.pid" ] || return 1
    pid=$(head -n 1 "$DATA/postmaster.pid" 2>/dev/null)
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    alive "$pid" || return 1
    case "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" in *postgres*"-D $DATA"*) ;; *) return 1 ;; esac
    echo "$pid"
}

sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$RUN" -p $PORT -U $SUPER -d "${PGCTL_DB:-$DB}" -c "$1"; }

ready() { psql -X -A -t -h "$RUN" -p $PORT -U $SUPER -d postgres -c "SELECT 1" >/dev/null 2>&1; }

start() {
    if pid=$(our_pid); then
        ready && { echo "postgres already running (pid $pid)"; return 0; }
    fi
    [ -f "$DATA/PG_VERSION" ] || die "no cluster in $DATA: run 'init' first"
    reachable
    # pg_ctl waits until the server accepts connections; the postmaster detaches into its own session
    # and writes to the log in ./run.
    $AS "$BIN/pg_ctl" -D "$DATA" -l "$RUN/postgres.log" -w -t 60 start </dev/null >"$RUN/pg_ctl.out" 2>&1 || {
        tail -n 5 "$RUN/postgres.log" >&2 2>/dev/null
        die "the server did not start ($(tail -n 1 "$RUN/pg_ctl.out"))"
    }
    echo "postgres up (pid $(head -n 1 "$DATA/postmaster.pid"))"
}

# Backends, checkpointer, … of a postmaster: they outlive a kill -9 of it for a moment, and a new server
# cannot start while they still hold the old shared memory. Found by their parent PID, never by name.
children() { # PID
    grep -ls "^PPid:[[:space:]]*$1\$" /proc/[0-9]*/status | sed 's|/proc/\([0-9]*\)/status|\1|'
}

wait_gone() { # PID... : up to 30 s
    i=0
    for p in "$@"; do
        while alive "$p" && [ $i -lt 600 ]; do
            sleep 0.05
            i=$((i + 1))
        done
    done
    for p in "$@"; do alive "$p" && return 1; done
    return 0
}

stop() {
    pid=$(our_pid) || { echo "no postgres of ours running"; return 0; }
    kids=$(children "$pid")
    kill -INT "$pid" 2>/dev/null # PostgreSQL's fast shutdown: clients are disconnected, a checkpoint is written
    if ! wait_gone "$pid"; then
        echo "postgres $pid still up 30 s after a fast shutdown; SIGQUIT (immediate shutdown)" >&2
        kill -QUIT "$pid" 2>/dev/null
        wait_gone "$pid" || kill -KILL "$pid" 2>/dev/null
    fi
    # shellcheck disable=SC2086
    wait_gone $kids || true
    echo "postgres $pid stopped"
}

setting_context() { sql "SELECT context FROM pg_settings WHERE name = '$1'"; }

show() { PGCTL_DB=postgres sql "SHOW $1" 2>/dev/null; }

apply_setting() { # NAME WANT: reload or restart, then wait until SHOW NAME = WANT ("" = whatever it is)
    if [ "$(PGCTL_DB=postgres setting_context "$1")" = postmaster ]; then
        stop >/dev/null && start >/dev/null || die "restart for $1 failed"
    else
        PGCTL_DB=postgres sql "SELECT pg_reload_conf()" >/dev/null || die "reload failed"
    fi
    [ -z "$2" ] && { echo "$1 = $(show "$1")"; return 0; }
    i=0
    while [ "$(show "$1")" != "$2" ]; do # a reload reaches the backends asynchronously
        [ $i -ge 100 ] && die "$1 is $(show "$1"), not $2, 5 s after the change"
        sleep 0.05
        i=$((i + 1))
    done
    echo "$1 = $2 (ALTER SYSTEM; in effect)"
}

hugepages() {
    total=$(sed -n 's/^HugePages_Total:[[:space:]]*//p' /proc/meminfo)
    size=$(sed -n 's/^Hugepagesize:[[:space:]]*//p' /proc/meminfo)
    if [ "${total:-0}" -gt 0 ]; then
        echo "HugePages_Total: $total (of $size)"
    else
        echo "HugePages_Total: ${total:-none} — no huge pages reserved on this machine (vm.nr_hugepages)" >&2
        exit 1
    fi
}

crash() {
    secs=${1:-1}
    pid=$(our_pid) || die "no postgres of ours running"
    pgbench -h "$RUN" -p $PORT -U $SUPER -n -c 4 -j 2 -T 60 $DB </dev/null >"$RUN/crash-load.log" 2>&1 &
    load=$!
    sleep "$secs"
    kids=$(children "$pid")
    kill -KILL "$pid"
    # PostgreSQL will not start while the PID in the stale postmaster.pid exists, even as a zombie: wait
    # until whoever adopted the daemon (PID 1) has reaped it.
    i=0
    while [ -d "/proc/$pid" ] && [ $i -lt 400 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    # The backends see their postmaster gone and exit; pgbench loses its connections and ends.
    # shellcheck disable=SC2086
    wait_gone $kids || die "backends of the killed postmaster $pid are still running after 30 s"
    i=0
    while alive "$load" && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    alive "$load" && kill -TERM "$load" 2>/dev/null
    wait "$load" 2>/dev/null
    echo "killed postmaster $pid under pgbench load after ${secs}s"
    start >/dev/null || die "no restart after the kill"
    redo=$(grep "redo done at" "$RUN/postgres.log" | tail -n 1 | sed 's/.*\(redo done at [^ ]*\).*/\1/')
    echo "restarted (pid $(head -n 1 "$DATA/postmaster.pid")) after crash recovery: ${redo:-no redo line in the log}"
}

amcheck() {
    ready || die "the server does not accept connections"
    out=$("$BIN/pg_amcheck" -h "$RUN" -p $PORT -U $SUPER -d $DB --install-missing --heapallindexed 2>&1)
    rc=$?
    [ $rc -eq 0 ] || { echo "$out" | tail -n 5 >&2; die "pg_amcheck found damage (exit $rc)"; }
    n=$(sql "SELECT count(*) FROM pgbench_branches")
    [ "$n" = "$SCALE" ] || die "pgbench_branches has $n rows, not $SCALE"
    echo "pg_amcheck: no damage in $DB; $(sql "SELECT count(*) FROM pgbench_history") history rows"
}

init() {
    SCALE=${1:-2}
    command -v pgbench >/dev/null || die "pgbench is not installed"
    reachable
    stop >/dev/null
    rm -rf "$DATA" "$RUN" "$DIR/pgbench.scale"
    mkdir -p "$DATA" "$RUN"
    chmod 700 "$DATA"
    [ -n "$AS" ] && chown postgres "$DATA" "$RUN"
    len=$(printf %s "$RUN/.s.PGSQL.$PORT" | wc -c)
    [ "$len" -le 107 ] || die "socket path $RUN/.s.PGSQL.$PORT is $len bytes, over the 107 a UNIX socket allows"
    $AS "$BIN/initdb" -D "$DATA" -U $SUPER -A trust -E UTF8 >"$RUN/initdb.log" 2>&1 || {
        tail -n 5 "$RUN/initdb.log" >&2
        die "initdb failed"
    }
    cat >>"$DATA/postgresql.conf" <<EOF

# baseline, written by pgctl.sh init: durability on, reachable only through ./run
listen_addresses = ''
unix_socket_directories = '$RUN'
port = $PORT
fsync = on
synchronous_commit = on
full_page_writes = on
huge_pages = try
logging_collector = off
EOF
    start
    PGCTL_DB=postgres sql "CREATE DATABASE $DB" || die "CREATE DATABASE failed"
    pgbench -h "$RUN" -p $PORT -U $SUPER -i -s "$SCALE" -q $DB >"$RUN/pgbench-init.log" 2>&1 || {
        tail -n 3 "$RUN/pgbench-init.log" >&2
        die "pgbench -i failed"
    }
    sql "CREATE EXTENSION IF NOT EXISTS amcheck"
    echo "$SCALE" >"$DIR/pgbench.scale"
    echo "bench database ready: pgbench scale $SCALE"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
init) init "${1:-2}" ;;
start) start ;;
stop) stop ;;
restart) stop && start ;;
health) ready && echo "accepting connections on $RUN" || die "no connection on $RUN" ;;
set)
    [ $# -eq 2 ] || die "usage: set NAME VALUE"
    sql "ALTER SYSTEM SET $1 = '$2'" || die "ALTER SYSTEM SET $1 failed"
    apply_setting "$1" "$2"
    ;;
reset)
    [ $# -eq 1 ] || die "usage: reset NAME"
    sql "ALTER SYSTEM RESET $1" || die "ALTER SYSTEM RESET $1 failed"
    apply_setting "$1" ""
    ;;
is)
    [ $# -eq 2 ] || die "usage: is NAME VALUE"
    if ready; then
        now=$(show "$1") || die "SHOW $1 failed"
    else # down: what ALTER SYSTEM left for the next start
        now=$(sed -n "s/^$1 = '\(.*\)'\$/\1/p" "$DATA/postgresql.auto.conf" 2>/dev/null | tail -n 1)
        echo "(server down; postgresql.auto.conf)"
    fi
    echo "$1 = $now"
    [ "$now" = "$2" ]
    ;;
hugepages) hugepages ;;
crash) crash "${1:-1}" ;;
amcheck) amcheck ;;
*) die "usage: sh pgctl.sh init|start|stop|restart|health|set N V|reset N|is N V|hugepages|crash S|amcheck" ;;
esac
