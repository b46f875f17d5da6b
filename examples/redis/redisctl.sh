#!/bin/sh
# redisctl.sh — one Redis server per host working directory, for the redis campaign.
#
# Run it in the host's working directory (signoff runs every command there): the server listens on
# ./redis.sock only (port 0), and keeps its config, pidfile, log and AOF in that directory, so two
# campaigns (or two test runs) on one machine never meet. It only ever signals the PID in its own
# pidfile, and only when that process is a redis-server whose working directory is this one.
#
#   init                  stop our old server, write the baseline redis.conf, start on an empty dataset
#   start | stop | restart
#   health                PONG from the server (exit 0), else exit 1
#   alive                 read-only: exit 0 while our redis-server process exists (answering or not)
#   surge CLIENTS         stress: CLIENTS connections at once, 5000 SETs; a server at its maxclients
#                         refuses the excess and redis-benchmark waits on them silently, for ever
#   bighash FIELDS        stress: one hash grown to FIELDS fields by pipelined HSETs, a line whenever
#                         the server's HLEN has grown (read every 0.2 s); then the hash is deleted and
#                         the AOF rewritten (BGREWRITEAOF), so that no restart replays the test's writes
#   set KEY VALUE         CONFIG SET + CONFIG REWRITE: a live change that redis.conf keeps
#   reconf KEY VALUE      for settings Redis cannot change live (io-threads): edit redis.conf, restart
#   is KEY VALUE          read-only: exit 0 when the running server (or, when it is down, redis.conf)
#                         has KEY = VALUE, 1 when not
#   version-at-least N    read-only: exit 0 when redis-server is version N or newer
#   crash WRITES          stress: SET load, acknowledged INCRs, kill -9 of the server under load,
#                         redis-check-aof, restart; fails when the AOF is damaged or an acked write is lost
#   acked                 read-only: the server is up and has every write the last crash test saw acked
set -u

DIR=$(pwd -P)
SOCK=./redis.sock
PIDFILE=$DIR/redis.pid
CLI="redis-cli -s $SOCK"

die() { echo "redisctl: $*" >&2; exit 1; }

# Alive and not a zombie (an exited daemon stays in /proc until whoever adopted it reaps it).
alive() {
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ]
}

# The PID in our pidfile, if that process is alive, is a redis-server, and runs in this directory.
our_pid() {
    [ -f "$PIDFILE" ] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null)
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    alive "$pid" || return 1
    case "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" in *redis-server*) ;; *) return 1 ;; esac
    [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$DIR" ] || return 1
    echo "$pid"
}

ping() { [ "$($CLI PING 2>/dev/null)" = PONG ]; }

wait_up() {
    i=0
    while [ $i -lt 200 ]; do # 10 s: an AOF is loaded before the server answers PONG
        ping && return 0
        sleep 0.05
        i=$((i + 1))
    done
    tail -n 5 redis.log >&2 2>/dev/null
    die "the server did not answer PING within 10 s (redis.log above)"
}

write_conf() {
    cat >redis.conf <<EOF
# baseline, written by redisctl.sh init: durability first
port 0
unixsocket $SOCK
unixsocketperm 700
dir $DIR
pidfile $PIDFILE
logfile $DIR/redis.log
daemonize yes
appendonly yes
appendfsync always
save ""
io-threads 1
latency-tracking yes
hash-max-listpack-entries 512
EOF
}

start() {
    if pid=$(our_pid); then
        ping && { echo "redis-server already running (pid $pid)"; return 0; }
    fi
    [ -f redis.conf ] || die "no redis.conf here: run 'init' first"
    command -v redis-server >/dev/null || die "redis-server is not installed"
    rm -f "$PIDFILE"
    # daemonize yes: redis-server forks, detaches (setsid) and points its stdio at /dev/null.
    redis-server "$DIR/redis.conf" </dev/null >>redis.start.log 2>&1 || {
        tail -n 5 redis.start.log >&2
        die "redis-server did not start"
    }
    wait_up
    echo "redis-server up (pid $(cat "$PIDFILE"))"
}

stop() {
    pid=$(our_pid) || { rm -f "$PIDFILE"; echo "no redis-server of ours running"; return 0; }
    kill -TERM "$pid" 2>/dev/null
    i=0
    while alive "$pid" && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    if alive "$pid"; then
        echo "redis-server $pid ignored SIGTERM for 10 s; SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$PIDFILE"
    echo "redis-server $pid stopped"
}

config_get() { $CLI CONFIG GET "$1" 2>/dev/null | sed -n 2p; }

conf_value() { # the last "KEY value" line of redis.conf, unquoted
    sed -n "s/^$1[[:space:]][[:space:]]*//p" redis.conf 2>/dev/null | tail -n 1 | tr -d '"'
}

edit_conf() { # KEY VALUE: replace (or add) the setting in redis.conf
    grep -v "^$1[[:space:]]" redis.conf >redis.conf.new || true
    echo "$1 $2" >>redis.conf.new
    mv redis.conf.new redis.conf
}

set_live() {
    said=$($CLI CONFIG SET "$1" "$2" 2>&1)
    [ "$said" = OK ] || die "CONFIG SET $1 $2: $said"
    said=$($CLI CONFIG REWRITE 2>&1)
    [ "$said" = OK ] || die "CONFIG REWRITE: $said"
    echo "$1 = $(config_get "$1") (running and in redis.conf)"
}

is() {
    if ping; then now=$(config_get "$1"); else now=$(conf_value "$1"); fi
    echo "$1 = $now"
    [ "$now" = "$2" ]
}

version_at_least() {
    v=$(redis-server --version 2>/dev/null | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')
    [ -n "$v" ] || die "cannot read the redis-server version"
    major=${v%%.*}
    if [ "$major" -ge "$1" ]; then
        echo "redis-server $v is $1 or newer"
    else
        echo "redis-server $v is older than $1" >&2
        exit 1
    fi
}

crash() {
    writes=${1:-200}
    pid=$(our_pid) || die "no redis-server of ours running"
    redis-benchmark -s $SOCK -t set -r 100000 -n 100000000 -c 20 -q </dev/null >/dev/null 2>&1 &
    load=$!
    sleep 0.2
    # Acknowledged writes while the load runs: every one of them must survive the kill.
    acked=0
    i=0
    while [ $i -lt "$writes" ]; do
        got=$($CLI INCR stress:acked 2>/dev/null) || break
        case "$got" in '' | *[!0-9]*) break ;; esac
        acked=$got
        i=$((i + 1))
    done
    echo "$acked" >stress.acked
    kill -KILL "$pid"
    while alive "$pid"; do sleep 0.02; done
    kill -TERM "$load" 2>/dev/null
    wait "$load" 2>/dev/null
    rm -f "$PIDFILE"
    echo "killed redis-server $pid under SET load, $i acknowledged INCRs in this run (stress:acked = $acked)"
    redis-check-aof appendonlydir/appendonly.aof.manifest >aof-check.log 2>&1 || {
        tail -n 3 aof-check.log >&2
        die "redis-check-aof: the AOF is damaged after kill -9"
    }
    echo "redis-check-aof: $(tail -n 1 aof-check.log)"
    start
}

bighash() {
    fields=$1
    ping || die "the server does not answer PING"
    $CLI DEL stress:hash >/dev/null
    # FIELDS inline HSETs down one connection (--pipe: no round trip per command; exit 1 on an error reply)
    awk -v n="$fields" 'BEGIN { for (i = 0; i < n; i++) printf "HSET stress:hash field:%d %d\r\n", i, i }' |
        $CLI --pipe >bighash.log 2>&1 &
    load=$!
    # A line each time the server's hash has grown (HLEN, read every 0.2 s): progress as Redis sees it.
    seen=0
    while kill -0 "$load" 2>/dev/null; do
        sleep 0.2
        n=$($CLI HLEN stress:hash 2>/dev/null)
        case "$n" in '' | *[!0-9]*) continue ;; esac
        [ "$n" -gt "$seen" ] || continue
        seen=$n
        echo "stress:hash: $n fields ($($CLI OBJECT ENCODING stress:hash 2>/dev/null))"
    done
    wait "$load" || { tail -n 3 bighash.log >&2; die "HSET stress:hash failed"; }
    echo "stress:hash: $($CLI HLEN stress:hash) fields written"
    $CLI DEL stress:hash >/dev/null
    # The AOF holds every HSET: rewrite it, so that a restart (kill -9 test, reconf) replays none of them.
    said=$($CLI BGREWRITEAOF 2>&1)
    case "$said" in *started* | *scheduled*) ;; *) die "BGREWRITEAOF: $said" ;; esac
    i=0
    while [ $i -lt 200 ]; do
        case "$($CLI INFO persistence 2>/dev/null | tr -d '\r')" in
        *aof_rewrite_in_progress:0*aof_rewrite_scheduled:0*) echo "stress:hash deleted, AOF rewritten"; return 0 ;;
        esac
        sleep 0.05
        i=$((i + 1))
    done
    die "the AOF rewrite did not finish within 10 s"
}

acked() {
    ping || die "the server does not answer PING"
    want=$(cat stress.acked 2>/dev/null) || die "no crash test has run here"
    got=$($CLI GET stress:acked)
    [ "${got:-0}" -ge "$want" ] || die "lost acknowledged writes: stress:acked is ${got:-missing}, $want were acked"
    echo "stress:acked = $got (>= $want acked before the kill); $($CLI DBSIZE) keys"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
init)
    stop >/dev/null
    rm -rf appendonlydir dump.rdb redis.log redis.start.log stress.acked aof-check.log
    write_conf
    start
    ;;
start) start ;;
stop) stop ;;
restart) stop && start ;;
health) ping && echo PONG || die "no PONG on $SOCK" ;;
alive) pid=$(our_pid) && echo "redis-server $pid is running" || die "no redis-server of ours is running" ;;
surge)
    [ $# -eq 1 ] || die "usage: surge CLIENTS"
    redis-benchmark -s $SOCK -t set -n 5000 -r 100000 -c "$1" -q </dev/null
    ;;
bighash) [ $# -eq 1 ] || die "usage: bighash FIELDS"; bighash "$1" ;;
set) [ $# -eq 2 ] || die "usage: set KEY VALUE"; set_live "$1" "$2" ;;
reconf)
    [ $# -eq 2 ] || die "usage: reconf KEY VALUE"
    edit_conf "$1" "$2"
    stop >/dev/null && start && is "$1" "$2"
    ;;
is) [ $# -eq 2 ] || die "usage: is KEY VALUE"; is "$1" "$2" ;;
version-at-least) [ $# -eq 1 ] || die "usage: version-at-least MAJOR"; version_at_least "$1" ;;
crash) crash "${1:-200}" ;;
acked) acked ;;
*) die "usage: sh redisctl.sh init|start|stop|restart|health|alive|set K V|reconf K V|is K V|version-at-least N|crash N|acked|surge N|bighash N" ;;
esac
