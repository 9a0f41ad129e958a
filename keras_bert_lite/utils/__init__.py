"""Small shared helpers (atomic file writes, the input-file error)."""
