"""Which format an input path holds: the one rule the CLI and the Spark job share.

    detect_format('train.parquet')                 # 'parquet' (magic bytes PAR1)
    detect_format('out/spark-csv/')                # 'csv' (a folder of part-*.csv written by Spark)
    detect_format('train.txt')                     # 'libsvm' or 'csv', read from the first data line
    detect_format('data.bin', 'csv')               # the flag wins: 'csv'

The format comes from the flag when one is given, else from the content: Parquet and ORC files by their
magic bytes, folders by the files inside (Spark's ``_SUCCESS`` and ``.crc`` files are ignored), text files
by their extension or, for ``.txt`` and unknown names, by their first data line.  A path whose format cannot
be told is refused with ConfigError naming it and asking for the flag; nothing is ever guessed as libsvm.
Reads at most a few kilobytes; never blocks beyond local file I/O.
"""
import os

from sparkps.errors import ConfigError

FORMATS = ("libsvm", "csv", "parquet", "orc")
# the CTR job's formats: Criteo's TSV (40 tab-separated cells), libffm (field:feature:value), Angel's dummy
# (label then integer feature indices), besides libsvm, CSV and Parquet
CTR_FORMATS = ("parquet", "csv", "criteo", "libffm", "dummy", "libsvm")
CRITEO_TABS = 39
MAGIC = {b"PAR1": "parquet", b"ORC": "orc"}
EXTENSIONS = {".parquet": "parquet", ".orc": "orc", ".csv": "csv", ".tsv": "csv", ".libsvm": "libsvm",
              ".svm": "libsvm"}
SNIFF_BYTES = 8192


def detect_format(path, flag=None, formats=FORMATS):
    """The format of ``path``, one of ``formats`` (default 'libsvm', 'csv', 'parquet' or 'orc'; the CTR job
    passes CTR_FORMATS); ``flag`` (e.g. --format) wins when given and not 'auto'.  One rule for every job and
    the CLI: magic bytes (Parquet, ORC), else the first data line (40 tab-separated cells: criteo; ``label
    i:v ...``: libsvm; ``label f:i:v ...``: libffm; ``label i j ...``: dummy; commas: csv), else the file name.
    Raises ConfigError for a missing path, an empty folder or content of no known format."""
    if flag and flag != "auto":
        if flag not in formats:
            raise ConfigError("unknown input format %r; use one of %s" % (flag, ", ".join(formats)))
        return flag
    local = _local_path(path)
    if local is None:
        return _from_name(path) or _refuse(path, "it is not on a local file system")
    if not os.path.exists(local):
        raise ConfigError("input %s does not exist" % path)
    if os.path.isdir(local):
        return _folder_format(path, local, formats)
    return _file_format(path, local, formats)


def data_files(folder):
    """The data files of a folder as Spark writes it: hidden and ``_``-prefixed files (``_SUCCESS``,
    ``.part-0.crc``) left out, sorted by name."""
    names = sorted(n for n in os.listdir(folder) if not n.startswith(("_", ".")))
    return [os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))]


def csv_has_header(path):
    """True when the first line of the CSV file (or of the folder's first data file) is not all numbers."""
    local = _local_path(path)
    if local is None:
        return True
    if os.path.isdir(local):
        files = data_files(local)
        if not files:
            return True
        local = files[0]
    line = _first_line(local)
    return line is not None and not all(_is_number(cell) for cell in line.split(","))


def _folder_format(path, local, formats=FORMATS):
    files = data_files(local)
    if not files:
        raise ConfigError("input folder %s holds no data files" % path)
    kinds = {_from_name(f) for f in files} - {None}
    if len(kinds) == 1:
        return kinds.pop()
    if len(kinds) > 1:
        raise ConfigError("input folder %s mixes formats (%s); give --format" % (path, ", ".join(sorted(kinds))))
    return _file_format(files[0], files[0], formats)


def _file_format(path, local, formats=FORMATS):
    with open(local, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    for magic, name in MAGIC.items():
        if head.startswith(magic):
            return name
    by_name = _from_name(local)
    if by_name in ("parquet", "orc"):
        raise ConfigError("%s is named like a %s file but does not start with its magic bytes" % (path, by_name))
    if by_name and formats == FORMATS:
        return by_name
    if b"\0" in head:
        return _refuse(path, "it is binary and neither Parquet nor ORC", formats)
    return _sniff_text(path, head.decode("utf-8", "replace"), formats)


def _sniff_text(path, text, formats=FORMATS):
    """The format of the first data line (see detect_format), or the file name's, or ConfigError."""
    raw = [line for line in text.splitlines() if line.split("#", 1)[0].strip()]
    if not raw:
        return _refuse(path, "it has no data lines", formats)
    tokens = raw[0].split("#", 1)[0].split()
    if "criteo" in formats and raw[0].count("\t") == CRITEO_TABS:
        return "criteo"
    if _is_number(tokens[0]) and all(_is_feature(t) for t in tokens[1:]):
        return "libsvm"
    if "libffm" in formats and _is_number(tokens[0]) and all(_is_ffm(t) for t in tokens[1:]):
        return "libffm"
    if "dummy" in formats and len(tokens) > 1 and all(_is_int(t) for t in tokens):
        return "dummy"
    if "," in raw[0]:
        return "csv"
    return _from_name(path) or _refuse(path, "its first line is neither 'label index:value ...' nor "
                                             "comma-separated", formats)


def _is_ffm(token):
    parts = token.split(":")
    return len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit() and _is_number(parts[2])


def _is_int(token):
    return token.lstrip("-").isdigit()


def _is_feature(token):
    index, sep, value = token.partition(":")
    return bool(sep) and (index.isdigit() or index == "qid") and _is_number(value)


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _from_name(path):
    name = str(path).rstrip("/").lower()
    for suffix in (".gz", ".bz2", ".snappy", ".zst"):
        if name.endswith(suffix) and not name.endswith(".parquet" + suffix):
            name = name[:-len(suffix)]
    for extension, kind in EXTENSIONS.items():
        if name.endswith(extension):
            return kind
    return None


def _first_line(local):
    with open(local, "rb") as handle:
        for raw in handle:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                return line
    return None


def _local_path(path):
    text = str(path)
    if text.startswith("file://"):
        return text[len("file://"):]
    if text.startswith("file:"):
        return text[len("file:"):]
    return None if "://" in text else text


def _refuse(path, why, formats=FORMATS):
    raise ConfigError("cannot tell the format of %s (%s): give --format %s" % (path, why, "|".join(formats)))


def input_line(path, kind, row):
    """The 1-based line of ``path`` (one local libsvm or CSV file) holding data row ``row`` (0-based, in
    file order, as Spark numbers a single file's rows), or None when that cannot be told (folders, remote
    paths, other formats, fewer rows)."""
    local = _local_path(path)
    if local is None or kind not in ("libsvm", "csv") or not os.path.isfile(local):
        return None
    skip_header = kind == "csv" and csv_has_header(local)
    seen = -1
    with open(local, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.decode("utf-8", "replace").strip()
            if not text or (kind == "libsvm" and text.startswith("#")):
                continue
            if skip_header:
                skip_header = False
                continue
            seen += 1
            if seen == row:
                return number
    return None
