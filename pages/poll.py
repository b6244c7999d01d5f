"""Ask the class: a poll on the presenter's question, answered from phones (ui/classroom/poll_views.py).
Layout only: the questions, the store and every sentence about the counts come from
attnviz.classroom.poll_questions and attnviz.classroom.polls through ui.classroom.poll_views."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

from ui import state
from ui.classroom import poll_views as poll

poll.page(state.config())
