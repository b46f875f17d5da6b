"""What the command check knows of bash and of programs: node types, operators, wrappers and what they run,
shells, flags that mean the same, and the bounds past which a command is not parsed."""

from __future__ import annotations

import re

# Past this a command is not parsed at all: no campaign command is anywhere near it, and a bound keeps
# the parser's memory and time predictable whatever a model sends.
MAX_COMMAND_BYTES = 256 * 1024


# Substitutions within substitutions, scripts given to `eval`/`sh -c`, expansions within expansions:
# deeper than this is asked about rather than followed (the walk stays well inside Python's stack).
MAX_DEPTH = 40


# Writing to these never leaves the process: they are not files outside the working directory.
HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}


# Text that bash may still evaluate when the word reaches an arithmetic or subscript context
# (`test -v 'a[$(cmd)]'`, `printf -v`, `read`, …) or a prompt expansion.
EVALUATED = ("$(", "`", "${", "$[")


WRITE_OPS = {">", ">>", "&>", "&>>", ">|", "<>"}


DUP_OPS = {">&", "<&"}


REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}


# Nodes whose named children are statements (or words, redirects) to walk in turn.
CONTAINERS = {
    "program", "list", "pipeline", "subshell", "compound_statement", "do_group", "if_statement", "elif_clause",
    "else_clause", "while_statement", "negated_command", "case_statement", "case_item", "for_statement",
    "function_definition", "redirected_statement"
}  # fmt: skip


WORDS = {
    "word", "number", "raw_string", "string", "ansi_c_string", "translated_string", "concatenation",
    "simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion",
    "extglob_pattern", "brace_expression"
}  # fmt: skip


SKIPPED = {"comment", "variable_name", "heredoc_start", "heredoc_end", "file_descriptor"}


# Parameter expansions that only substitute text: no assignment, no evaluation of the value.
PLAIN_EXPANSION_OPS = {":-", "-", ":+", "+", ":?", "?", "#", "##", "%", "%%"}


# Builtins that take variable *names*, and so evaluate an array subscript written in one.
NAME_TAKING = {
    *("read", "mapfile", "readarray", "getopts", "wait", "declare", "typeset", "local", "export"),
    *("readonly", "unset", "printf"),
}


SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"}


# Builtins and programs that can run a string or stream (see Walker.evaluating).
EVALUATING = {
    *("trap", "alias", "mapfile", "readarray", "hash", "enable", "declare", "typeset", "local"),
    *("source", ".", "env", "script", "fc", "complete", "bind"),
}


# A script "file" that is a stream: what it holds is never seen.
STREAM = re.compile(r"^(-|/dev/stdin|/dev/fd/\d+|/proc/self/fd/\d+|<\(.*)$")


# Wrappers that run their arguments as a command, and the options of each that take a value (so the
# value is not mistaken for the wrapped command). Approximate by design: what is found here is only
# ever checked against deny and ask patterns, in addition to the wrapper's own check.
WRAPPERS: dict[str, set[str]] = {
    "command": set(),
    "builtin": set(),
    "exec": {"-a"},
    "nohup": set(),
    "time": {"-f", "-o"},
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "doas": {"-u", "-C"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "env": {"-u", "-C", "-S"},
    "stdbuf": {"-i", "-o", "-e"},
    "setsid": set(),
    "coproc": set(),
    "xargs": {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--delimiter", "--max-args"},
    "timeout": {"-k", "-s", "--signal", "--kill-after"},
    "taskset": set(),
    "chrt": set(),
    "chroot": set(),
    "flock": {"-w", "-E"},
    "watch": {"-n", "-d"},
    "unbuffer": set(),
    "strace": {"-e", "-o", "-p", "-s", "-u"},
    "unshare": set(),
    "nsenter": {"-t", "-S", "-G"},
    "runuser": {"-u", "-g", "-G"},
    "setpriv": set(),
    "systemd-run": {"-p", "-u", "--unit"},
    "busybox": set(),
    "sg": set(),
}


# Programs that run other programs as their arguments, for deny and ask checks beside the above, whose
# options are not modelled (see unwrap): profilers, sandboxes, limiters.
for _name in (
    "prlimit", "setarch", "perf", "valgrind", "numactl", "gdb", "ltrace", "cgexec", "firejail", "bwrap", "fakeroot",
    "faketime", "torsocks", "proxychains", "proxychains4", "chronic", "nsys", "ncu", "nvprof", "rr", "heaptrack",
    "catchsegv", "uftrace", "caffeinate", "ionice", "chpst", "daemonize", "start-stop-daemon",
):  # fmt: skip
    WRAPPERS.setdefault(_name, set())


MAX_CANDIDATES = 8


# Programs that hand a string to `sh -c` (the options that carry it; empty: every operand).
STRING_RUNNERS: dict[str, set[str]] = {
    "flock": {"-c", "--command"},
    "runuser": {"-c", "--command"},
    "sg": set(),
    "watch": set(),
    "hyperfine": set(),
}


# Wrappers whose first operand is not the command (a duration, a mask, a directory, a lock file).
WRAPPER_SKIPS_OPERAND = {"timeout": 1, "taskset": 1, "chrt": 1, "chroot": 1, "flock": 1}


FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}


# Spellings of the same option, so that a deny pattern written one way matches the others.
FLAG_ALIASES: dict[str, dict[str, str]] = {
    "rm": {"R": "r", "--recursive": "r", "--force": "f"},
    "git": {"f": "--force"},  # `git push -f` is `git push --force`
}
