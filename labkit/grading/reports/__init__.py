"""What grading writes for the instructor and the students.

``gradebook`` (gradebook.csv), ``feedback`` (one page per student), ``summary`` (summary.md and
the class's figures), ``lms`` (Canvas CSV), ``class_data`` (every student's recorded figures as
one long table, the points far from the class), ``class_page`` (``DIR/class.html``) and ``cli``
(``labkit class``: the class page drawn again from a graded folder).
"""
