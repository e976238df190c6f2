"""Score raw CTR columns from an export alone (no sparkps): featurization.json, the Parquet rows, the ONNX graph."""
import hashlib
import json
import math
import os

import numpy as np
import onnxruntime
import pyarrow.parquet as pq

U64, GOLDEN = (1 << 64) - 1, 0x9E3779B97F4A7C15


def value_text(value):
    """The text a categorical value is hashed as."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def feature_id(field, value, person):
    """The unsigned 64-bit id of (field, value)."""
    salt = hashlib.blake2b(field.encode("utf-8"), digest_size=16).digest()
    digest = hashlib.blake2b(value_text(value).encode("utf-8"), digest_size=8, person=person.encode("ascii"),
                             salt=salt).digest()
    return int.from_bytes(digest, "little")


def mix64(z):
    """splitmix64's finaliser on a Python int in [0, 2**64)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    return z ^ (z >> 31)


def unseen_row(init, id_, dim):
    """The row the model reads for an id its table does not hold (the table's "unseen" entry)."""
    if init["kind"] in ("zeros", "constant"):
        return np.full(dim, init.get("value", 0.0), np.float32)

    def uniform(stream):
        base = mix64((mix64(id_ ^ int(init["seed"])) + stream) & U64)
        return np.array([(mix64((base + (c + 1) * GOLDEN) & U64) >> 11) * 2.0 ** -53 for c in range(dim)])

    if init["kind"] == "uniform":
        return ((2.0 * uniform(0) - 1.0) * init["scale"]).astype(np.float32)
    radius = np.sqrt(-2.0 * np.log1p(-uniform(0)))
    return (radius * np.cos(2.0 * np.pi * uniform(1)) * init["sigma"]).astype(np.float32)


class ReferenceScorer:
    """Click probabilities of records ({column: value}) from the export folder and the ONNX file."""

    def __init__(self, folder, onnx_path):
        with open(os.path.join(folder, "featurization.json"), encoding="utf-8") as f:
            self.doc = json.load(f)
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        self.rows = {}
        for name, entry in manifest["tables"].items():
            table = pq.read_table(os.path.join(folder, entry["file"]))
            vectors = table.column("vector").to_pylist()
            self.rows[name] = dict(zip(table.column("id").to_pylist(), vectors))
        self.session = onnxruntime.InferenceSession(onnx_path)

    def field_id(self, field, value):
        id_ = feature_id(field, value, self.doc["hash"]["person"]) if self.doc["hash_ids"] else int(value)
        buckets = self.doc["num_buckets"]
        return (((id_ >> 32) * buckets) & U64) >> 32 if buckets else id_

    def lookup(self, table, id_):
        signed = id_ - (1 << 64) if id_ >= 1 << 63 else id_
        row = self.rows[table].get(signed)
        if row is not None:
            return np.asarray(row, np.float32)
        return unseen_row(self.doc["tables"][table]["unseen"], id_, self.doc["tables"][table]["dim"])

    def field_rows(self, field, table, cell):
        dim = self.doc["tables"][table]["dim"]
        if field["kind"] == "single":
            return self.lookup(table, self.field_id(field["name"], cell))
        if cell is None:
            values = []
        elif isinstance(cell, str):
            values = [v for v in cell.split(field["separator"]) if v != ""]
        else:
            values = list(cell)
        rows = [self.lookup(table, self.field_id(field["name"], v)) for v in values[:field["width"]]]
        if not rows:
            return np.zeros(dim, np.float32)
        total = np.sum(rows, axis=0, dtype=np.float32)
        return total / np.float32(len(rows)) if field["pooling"] == "mean" else total

    def numeric(self, record):
        spec = self.doc["numeric"]
        out = []
        for column in spec["columns"]:
            x = record.get(column["name"])
            if x is None or math.isnan(x):
                out.append(0.0)
                continue
            x = math.copysign(math.log1p(abs(x)), x) if spec["log"] and x != 0 else float(x)
            out.append((x - column["mean"]) / column["std"])
        return np.asarray(out, np.float32)

    def score(self, records):
        feeds = {}
        for field in self.doc["fields"]:
            for table, name in field["onnx_inputs"].items():
                feeds[name] = np.stack([self.field_rows(field, table, r.get(field["name"])) for r in records])
        if self.doc["numeric"]["columns"]:
            feeds["dense"] = np.stack([self.numeric(r) for r in records])
        output = self.doc["onnx"]["outputs"][0]
        return self.session.run([output], feeds)[0].reshape(len(records), -1)[:, -1]
