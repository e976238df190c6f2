"""Click-through-rate data: what a CTR model reads (features.py), categorical values hashed to 64-bit ids
(hashing.py), numeric statistics (numeric.py), the CTR file formats (files.py), the reader of the earlier
versions' packed float rows (packed.py) and a generator of data with a planted model (synthetic.py)."""
