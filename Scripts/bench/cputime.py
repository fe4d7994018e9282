#!/usr/bin/env python3
"""cputime.py OUT -- COMMAND ...: runs COMMAND and writes "USER SYS MAXRSS_KIB" to OUT.

The benches' replacement for `/usr/bin/time -f '%U %S %M'`, which prints CPU seconds in 10 ms
steps: on a 0.2 s process that step is 5 %, as large as the differences being measured. The
child's own rusage from wait4 has microseconds (this script's start-up is not in it). Exits with
the command's status.
"""
import os
import sys


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    out, command = sys.argv[1], sys.argv[3:]
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    with open(out, "w") as f:
        f.write(f"{usage.ru_utime:.6f} {usage.ru_stime:.6f} {usage.ru_maxrss}\n")
    return os.waitstatus_to_exitcode(status) if status else 0


if __name__ == "__main__":
    sys.exit(main())
