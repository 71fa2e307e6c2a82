"""Model building blocks: norm, rotary, activation, embedding/head, paged attention."""
