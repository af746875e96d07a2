"""What a run leaves behind for readers: evidence and verdicts, figures with provenance, tables, the inventory and REPORT.md."""
