"""The chapter's attention core: the modules, their traces, inputs, tokens, settings, seeding
and the book's printouts. It imports nothing else of attnviz."""
