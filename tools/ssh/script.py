"""What a command runs inside on the host: its process group id printed first, the PATH made absolute, and the
watchdog that ends it if signoff cannot."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from tools.transport import (
    ABSOLUTE_PATH,
    SHELL,
    backstop,
)

PGID_MARK = "__SIGNOFF_PGID="
NO_BASH = "__SIGNOFF_NO_BASH"


def wrap(
    command: str,
    *,
    timeout: float,
    cwd: str | None,
    env: Mapping[str, str] | None,
    diagnosed: bool = False,
    stdin: bool = True,
    bash: bool = True,
) -> str:
    """Run `command` with a backstop and print its process group id first, on stderr.

    sshd starts every session's shell with setsid(), so that shell's pid is the process group of
    everything the command spawns: `kill -TERM -PGID` reaches all of it. The backstop holds even if signoff
    or the link dies; our own deadline fires first. The login shell only starts it: the command itself runs in
    bash (tools/transport.py: SHELL), with PATH's relative entries dropped first, beside `watchdog`;
    `bash=False` is for signoff's own setup commands, which run in `sh` under coreutils `timeout`.
    """
    term, kill = backstop(timeout, diagnosed=diagnosed)
    # Without stdin the command reads /dev/null, so the channel needs no EOF from us (see `_exec`).
    redirect = "" if stdin else " </dev/null"
    prefix = ABSOLUTE_PATH + watchdog(term, kill) if bash else ""
    if cwd:
        prefix += f"cd {shlex.quote(cwd)} || exit 126; "
    for key, value in (env or {}).items():
        prefix += f"export {key}={shlex.quote(value)}; "
    script = shlex.quote(prefix + command)
    if bash:
        return f"echo {PGID_MARK}$$ >&2; exec {' '.join(SHELL)} {script}{redirect}"
    return f"echo {PGID_MARK}$$ >&2; exec timeout -k {kill} {term} sh -c {script}{redirect}"


def watchdog(term: int, kill: int) -> str:
    """The backstop, forked by the command's own bash before the command runs: TERM to the whole group `term`
    seconds after the start, KILL `kill` seconds later; it ends itself once the command's shell has gone.

    It replaces coreutils `timeout`, which cost every command a second exec and a fork: about 1 ms of the 3.3 ms a
    pooled `true` took; this fork costs about 0.45 ms (bench/ssh_latency.py). (A keeper per connection that commands
    registered with cost as much: waking it is what costs.) Builtins only, nothing exec'd: it sleeps in `read -t` on a
    pty master no one writes to (`sleep` where there is no /dev/ptmx). Being in the group, it keeps the group's id
    from being reused while it lives, so its kill can reach no one else's processes; disowned, a `wait` or `jobs` in
    the command does not see it (`$!` does name it until the command starts a job of its own); its stdio is
    /dev/null, so it never holds the channel open. What it must survive, each found by an attack (tests/unit/
    test_ssh_watchdog.py): every signal the command can send its own group (`kill 0`, `kill -HUP 0`, `kill $!`) is
    ignored, so only KILL ends it early (signoff's own kill of a group ends with KILL); a shell that `exec`s a
    program that drops the user's rights is still there by /proc when `kill -0` may not signal it; posix mode
    (POSIXLY_CORRECT from the environment) would end the subshell at a failed redirection, so it is turned off; and
    SECONDS, which bash takes from the environment, is set to 0. Its clock is SECONDS, bounded by the naps it took
    (a clock stepped back cannot put the TERM off), in whole seconds: the TERM comes up to a second before `term`
    (still 2 s after signoff's own deadline, see tools/transport.py: OUTLIVE_S) and at most half a second after it,
    so the command is gone by `gone_after`."""
    # Ignored before the fork, so the watchdog is born ignoring them (a trap set in it would race the command's first
    # `kill 0`); the command's shell then takes back what it had. SIGINT apart: where the shell was started with it
    # ignored (a daemon, a job started in the background), bash's `trap - INT` does not leave it ignored but installs
    # bash's own handler, and the command's `kill -INT 0` then ends its shell. So INT is given back only if the
    # kernel's SigIgn (read without a fork: ~0.1 ms) says it was not ignored; where there is no /proc, it is given back.
    return (
        "__s=; read -r -d '' __s 2>/dev/null </proc/$$/status; "
        "[[ $__s =~ SigIgn:.[0-9a-f]*([0-9a-f]) ]] && ((0x${BASH_REMATCH[1]} & 2)) && __s=INT || __s=; "
        f"trap '' {_SURVIVED}; {{ set +o posix; SECONDS=0; __n=0; "
        'if exec 3<>/dev/ptmx; then __nap() { read -t "$1" -u 3; }; else __nap() { sleep "$1" || exit; }; fi; '
        f"while kill -0 $$ 2>/dev/null || [ -e /proc/$$ ]; do if ((SECONDS >= {term} || __n >= {2 * term})); then "
        f"kill -TERM -$$; __nap {kill}; kill -KILL -$$; fi; __nap 0.5; __n=$((__n + 1)); done; }} "
        f'</dev/null >/dev/null 2>&1 & trap - {_SURVIVED.replace(" INT", "")}; [ -n "$__s" ] || trap - INT; '
        "unset __s; disown 2>/dev/null; "
    )


_SURVIVED = "HUP INT QUIT ALRM TERM USR1 USR2 PIPE"  # every signal a command may send its own group but KILL
