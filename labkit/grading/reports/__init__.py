"""What grading writes for the instructor and the students: ``gradebook``, ``feedback``, ``summary``,
``lms`` (Canvas CSV), ``class_data`` and ``class_page`` (``DIR/class.html``), ``cli`` (``labkit class``).
"""
