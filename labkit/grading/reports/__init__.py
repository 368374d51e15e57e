"""What grading writes for the instructor and the students: ``gradebook`` (and the Canvas CSV, the feedback
pages, summary.md), ``class_page`` (the class's figures, ``DIR/class.html``), ``cli`` (``labkit class``).
"""
