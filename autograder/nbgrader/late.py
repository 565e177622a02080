"""Late submissions under ``nbgrader autograde``: nbgrader's own machinery, given course.toml's
rule (autograder/late.py), so that ``grades.csv`` and ``autograder grade`` agree.

- ``CourseLatePenalty`` is nbgrader's late-submission plugin (``AssignLatePenalties.plugin_class``,
  set by ``configure()`` unless the configuration names one): for the seconds nbgrader counts
  past the due date (its extension included) it gives course.toml's penalty, the grace period
  and the cap applied, as a share of the notebook's points.
- ``sync_gradebook`` (called by ``SandboxedGrades`` before ``AssignLatePenalties`` runs) makes
  nbgrader count the same seconds: the assignment's due date in gradebook.db becomes
  course.toml's ``deadline`` and the student's extension the roster's (a due date set in
  nbgrader that differs is replaced, with a warning: course.toml is the one place).
"""

from datetime import timezone

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Unicode

from autograder import config, late


class CourseLatePenalty(LateSubmissionPlugin):
    course_file = Unicode("", help="Path of course.toml (default: the one configure() pinned)").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        if self.penalty_method != "none":  # LateSubmissionPlugin.penalty_method set: nbgrader's rule
            return super().late_submission_penalty(student_id, score, total_seconds_late)
        path = self.course_file or self.config.SandboxedGrades.get("course_file") or None
        policy = config.load(path).late
        percent = late.percent_for(policy, total_seconds_late)
        penalty = round(float(score) * percent / 100.0, 6)
        self.log.info("autograder: %s is %.0f s late: %g%% of %g points (course.toml's [late])",
                      student_id, total_seconds_late, percent, score)
        return penalty if penalty > 0 else None


def sync_gradebook(plan, info, log):
    """Put course.toml's deadline and the student's extension into gradebook.db, and return the
    student's late.Lateness (None without a deadline or a submission time)."""
    if plan.deadline is None or not info.get("db_url"):
        return None
    from nbgrader.api import Gradebook, MissingEntry

    student, name = info.get("student"), plan.name
    due = plan.deadline.astimezone(timezone.utc).replace(tzinfo=None)
    try:
        with Gradebook(info["db_url"]) as gradebook:
            assignment = gradebook.find_assignment(name)
            if assignment.duedate != due:
                if assignment.duedate is not None:
                    log.warning("autograder: %s's due date in gradebook.db (%s UTC) is not course.toml's "
                                "deadline (%s): course.toml's is used", name, assignment.duedate, due)
                assignment.duedate = due
                gradebook.db.commit()
            extension = plan.late.extensions.get(student, 0.0) if plan.late else 0.0
            gradebook.grant_extension(name, student, days=extension)
            submitted = gradebook.find_submission(name, student).timestamp
    except MissingEntry as error:
        log.warning("autograder: %s / %s: no gradebook entry for the deadline (%s)", student, name, error)
        return None
    if submitted is None:
        return None
    return plan.lateness(student, submitted.replace(tzinfo=timezone.utc))
