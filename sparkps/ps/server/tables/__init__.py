"""Server-side tables: each kind owns its storage, its optimizer state and its update (dense ranges, sparse rows)."""
