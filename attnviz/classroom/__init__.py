"""The classroom: class polls and their stores (memory, Redis), QR codes, and a question as
a poll."""
