"""Ask the class: a poll on the presenter's question, answered from phones (ui/poll.py).
Layout only: the questions, the store and every sentence about the counts come from
attnviz.classroom and attnviz.polls through ui.poll."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

from ui import poll, state

poll.page(state.config())
