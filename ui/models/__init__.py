"""The Streamlit side of the pages beyond the book: page 5 (watch attention learn), page 6
(against PyTorch), page 7 (trained heads), page 8 (grow an induction head),
and the home page's toy sentence through its two recorded encoder–decoders."""
