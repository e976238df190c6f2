"""A job's failure as one line and an exit code, whatever raised it: sparkps's own errors, Spark's (a Python
exception around a Java one, its message followed by the JVM's frames), a file system's, or Ctrl-C.

    except KeyboardInterrupt:
        message, code = interrupted(args.output)               # one line, exit 130
    except Exception as exc:
        message, code = failure_line(exc)                      # 2: the input's fault; 1: a failure while training

Decisions, and ``run_job``, which runs a job's body and prints its one line.
"""
import re
import sys

from sparkps.errors import SparkpsError
from sparkps.spark.submit.job_settings import BAD_INPUT, TRAINING_FAILED, exit_code
from sparkps.spark.submit.stop_causes import stop_cause

INTERRUPTED = 130        # 128 + SIGINT, as a shell reports a job stopped by Ctrl-C
LONGEST = 400            # characters of a cause kept in the line
# Spark's error classes that say the input is at fault (a file that cannot be read, a cell that cannot be cast)
INPUT_ERRORS = ("FAILED_READ_FILE", "CANNOT_READ_FILE_FOOTER", "PATH_NOT_FOUND", "CAST_INVALID_INPUT",
                "UNRESOLVED_COLUMN", "MALFORMED_RECORD", "CORRUPTED", "Not a Parquet file", "is not a Parquet file")


_TRACEBACK = "Traceback (most recent call last):"
_RAISED = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit|Interrupt))(?::\s*(.*))?$")
_MISSING = re.compile(r"No module named '([\w.]+)'")
_STOPPED = "Cannot call methods on a stopped SparkContext"
_REMOVED = re.compile(r"(Master removed our application: \w+|Application has been killed\. Reason: [^\n]+)")


def worker_error(text):
    """The error a Python worker raised (``ModuleNotFoundError: No module named 'numpy'``): the exception line that
    ends the last Python traceback in ``text`` (pyspark's PythonException, or a Java error that carries one, its
    Java frames after it), or None when ``text`` holds no traceback."""
    if _TRACEBACK not in text:
        return None
    tail = text[text.rindex(_TRACEBACK) + len(_TRACEBACK):]
    raised = [line.strip() for line in tail.splitlines()
              if line.strip() and not line[:1].isspace() and _RAISED.match(line.strip())]
    return raised[0] if raised else None


def missing_module_hint(line):
    """What to change when ``line`` says a module cannot be imported on the executors ('' otherwise)."""
    found = _MISSING.search(line)
    if not found:
        return ""
    module = found.group(1)
    if module.split(".")[0] == "sparkps":
        return ("; the executors cannot import sparkps: ship it with spark-submit --py-files sparkps.zip (or "
                "spark.submit.pyFiles), or install it in the executors' Python on every node")
    return ("; the executors' Python (spark.pyspark.python / PYSPARK_PYTHON) cannot import %s: point it at a Python "
            "that has sparkps's dependencies, or install %s there on every node (pure-Python code can also travel "
            "with --py-files)" % (module, module.split(".")[0]))


def first_line(exc):
    """The first line of ``exc``'s message that says something, without Java frames or py4j's preamble ("An error
    occurred while calling o42.load."): ``ClassName: message`` for a Java exception, capped at LONGEST."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("at ", "JVM stacktrace", "An error occurred while"))]
    line = lines[0] if lines else type(exc).__name__
    if line.startswith(": "):
        line = line[2:]
    if line.startswith("org.apache.spark.") and ": " in line:     # the Java class adds nothing a user can act on
        line = line.split(": ", 1)[1]
    return line if len(line) <= LONGEST else line[:LONGEST - 3] + "..."


def failure_line(exc):
    """(one line, exit code) for ``exc``: sparkps's errors as they are (2 for bad input, 1 otherwise); an OSError
    naming its file (2); a Spark error whose class says the input is at fault (2), any other (1). A call on a
    SparkContext that Spark stopped by itself is named by the cause its scheduler backend logged
    (sparkps.spark.submit.stop_causes), e.g. the cluster manager's removal of the application."""
    if isinstance(exc, SparkpsError):       # a role that could not import a module: say what to change
        # SparkTrainer's slot check names its argument; a job's user sets the flag
        message = str(exc).replace("use num_workers <= ", "use --num-workers <= ")
        return message + missing_module_hint(message), exit_code(exc)
    if isinstance(exc, OSError):
        where = " %s" % exc.filename if getattr(exc, "filename", None) else ""
        return "%s%s: %s" % (type(exc).__name__, where, exc.strerror or exc), BAD_INPUT
    text = str(exc)
    cause = stop_cause() if _STOPPED in text else None    # then the reason is a log line, not the exception's
    removed = _REMOVED.search(cause or text)
    if removed:
        return ("the cluster manager ended the application (%s): see the master's log for why, and its executors' "
                "stderr" % removed.group(1)), TRAINING_FAILED
    if cause:
        return "Spark stopped the SparkContext before the job ended: %s" % cause, TRAINING_FAILED
    raised = worker_error(text)
    if raised:
        hint = missing_module_hint(raised)     # the setup's fault, as a ConfigError
        return "a Python worker on an executor failed: %s%s" % (raised, hint), \
            BAD_INPUT if hint or any(marker in text for marker in INPUT_ERRORS) else TRAINING_FAILED
    line = first_line(exc)
    if any(marker in text for marker in INPUT_ERRORS):
        return line, BAD_INPUT
    return "%s: %s" % (type(exc).__name__, line) if type(exc).__name__ not in line else line, TRAINING_FAILED


def interrupted(output=None):
    """(the line a job prints when Ctrl-C stops it: the output folder is left as it was, exit code 130)."""
    kept = "; --output %s left as it was" % output if output else ""
    return "interrupted (Ctrl-C)%s" % kept, INTERRUPTED


def run_job(name, call, output=None, describe=str):
    """``call()``'s exit code; when it raises, one line ``NAME: cause`` on stderr (``describe`` rewrites the text of
    sparkps's own errors, e.g. to add a file line) and the failure's exit code (130 for Ctrl-C, with ``output``
    named as ``interrupted`` says). Blocks as ``call`` does."""
    try:
        return call()
    except KeyboardInterrupt:
        message, code = interrupted(output)
    except Exception as exc:      # sparkps's, Spark's, the file system's: one line, no Java frames
        message, code = failure_line(exc)
        if isinstance(exc, SparkpsError):
            message = describe(message)
    print("%s: %s" % (name, message), file=sys.stderr)
    return code
