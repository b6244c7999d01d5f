"""Teaching: each page's lesson (panels, checks and claims), the bugs, the questions and
mysteries, the cell derivations, LaTeX export and reproduce snippets. Built on ``attnviz.core``."""
