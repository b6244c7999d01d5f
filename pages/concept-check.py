"""Did I learn it? The concept check: a student alone before and after the lesson, or a class
poll of the same questions (ui/classroom/concept_views.py). Layout only: the items and every
count come from attnviz.teach.concepts and attnviz.classroom.concept_polls."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

from ui.classroom import concept_views

concept_views.page()
