"""Review-gate commands (propose, review, receipts, watch)."""
