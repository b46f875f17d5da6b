#!/bin/sh
# ctl.sh — the campaign's control script, run in each host's working directory. Fill in each subcommand
# for your service; until then each one fails with a message, and `signoff run` stops at setup.
#
#   start              start the service (and stop an old one started here first)
#   health             exit 0 when the service answers
#   bench              one benchmark run; print "rps: N"
#   stress             a stress run; exit non-zero when the service misbehaved
#   set NAME VALUE     turn an option on (and restart the service when it needs it)
#   reset NAME         back to the baseline value
#   is NAME VALUE      read-only: exit 0 when NAME is VALUE in the running service, 1 when not
set -u
die() { echo "ctl.sh: $*" >&2; exit 1; }
case ${1:-} in
    start) die "fill in: how to start the service" ;;
    health) die "fill in: how to tell the service answers" ;;
    bench) die "fill in: one benchmark run that prints 'rps: N'" ;;
    stress) die "fill in: a stress run" ;;
    set) die "fill in: how to set ${2:-NAME} to ${3:-VALUE}" ;;
    reset) die "fill in: how to reset ${2:-NAME}" ;;
    is) die "fill in: how to read ${2:-NAME}" ;;
    *) die "usage: ctl.sh start|health|bench|stress|set NAME VALUE|reset NAME|is NAME VALUE" ;;
esac
