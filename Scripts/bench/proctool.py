"""Process measurements for Scripts/bench-load, from /proc (Linux only, standard library).

  proctool.py cpu PID          CPU seconds (user + system) of PID and all its descendants,
                               with the children they have reaped (attachd's sandbox helper
                               reaps one decode child per image: its CPU is in the helper's
                               cutime + cstime, and nowhere else once the child is gone)
  proctool.py hwm PID          peak RSS (VmHWM) of PID, MiB
  proctool.py watch PID FILE   samples VmRSS of PID every 50 ms until PID exits or this is
                               sent SIGTERM, then writes the largest sample (MiB) to FILE
"""

import os
import signal
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as file:
        text = file.read()
    # The command name is in parentheses and may contain spaces: split after the last ')'.
    return text[text.rindex(")") + 2:].split()


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(stat_fields(int(entry))[1])
            except (OSError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_seconds(root: int) -> float:
    total = 0
    for pid in descendants(root):
        try:
            fields = stat_fields(pid)
        except OSError:
            continue
        # utime, stime, cutime, cstime (fields 14–17 of stat). A child counts in its own
        # utime + stime while it runs and in its parent's cutime + cstime once reaped, so a
        # difference of two readings counts each child's CPU once.
        total += sum(int(field) for field in fields[11:15])
    return total / TICKS


def status_kib(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def watch(pid: int, out: str) -> None:
    peak = 0
    running = True

    def stop(*_: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    while running:
        try:
            peak = max(peak, status_kib(pid, "VmRSS"))
        except OSError:
            break
        time.sleep(0.05)
    with open(out, "w") as file:
        file.write(f"{peak / 1024:.1f}\n")


def main() -> None:
    command, pid = sys.argv[1], int(sys.argv[2])
    if command == "cpu":
        print(f"{cpu_seconds(pid):.2f}")
    elif command == "hwm":
        print(f"{status_kib(pid, 'VmHWM') / 1024:.1f}")
    elif command == "watch":
        watch(pid, sys.argv[3])
    else:
        sys.exit(f"proctool: unknown command {command}")


if __name__ == "__main__":
    main()
