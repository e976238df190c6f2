"""A process's resident memory, read from /proc (Linux): what the benchmarks that watch other processes (servers,
workers, a driver) measure. Nothing here blocks except ``settled_rss``, which polls until the figure holds."""
import time


def rss_of(pid):
    """Resident bytes of process ``pid`` (its VmRSS; 0 when it is gone)."""
    try:
        with open("/proc/%d/status" % pid, encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def command_line(pid):
    """The arguments of process ``pid`` as bytes (its /proc cmdline); None when it is gone."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def settled_rss(pid, seconds=10.0, tolerance=1 << 20, interval=0.5):
    """``rss_of(pid)`` once two readings ``interval`` apart differ by less than ``tolerance`` bytes, or the last
    reading after ``seconds``. Blocks up to ``seconds``."""
    last, deadline = rss_of(pid), time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(interval)
        now = rss_of(pid)
        if abs(now - last) < tolerance:
            return now
        last = now
    return last
