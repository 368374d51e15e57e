"""What grading writes for the instructor and the students: ``gradebook`` (and the Canvas CSV, the feedback
pages, summary.md), ``class_data`` and ``class_page`` (``DIR/class.html``), ``cli`` (``labkit class``).
"""
